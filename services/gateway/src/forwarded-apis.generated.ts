// generated from services/*/service.json by npm run generate:services; do not edit.
// The apis of every public service that the gateway does not serve itself
// ("public": true in its service.json), forwarded unchanged.
export const forwardedApiNames: readonly {
  api: string;
  dependency: string;
  defaultUrl: string;
  bulkhead: { maxConcurrent: number; minConcurrent: number; maxQueue: number };
}[] = [
];

// For every service the gateway calls, how many services its longest chain
// of calls crosses, itself included: each attempt needs their hop reserves.
export const callDepths: Readonly<Record<string, number>> = {
  "checkout": 3,
};
