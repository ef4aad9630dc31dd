// generated from services/*/service.json by npm run generate:services; do not edit.
// The apis of every public service that the gateway does not serve itself
// ("public": true in its service.json), forwarded unchanged.
export const forwardedApiNames: readonly { api: string; dependency: string; defaultUrl: string }[] = [
];
