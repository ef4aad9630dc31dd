// generated from services/*/service.json by npm run generate:services; do not edit.
// In dependency order (callees first). Types only: the launcher starts what
// the manifests say at run time.
export const serviceNames = ["pricing", "orders", "checkout", "example-echo", "example-notes", "gateway", "mailer", "receipts"] as const;
export type ServiceName = (typeof serviceNames)[number];
