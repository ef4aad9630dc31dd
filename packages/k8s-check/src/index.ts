/**
 * Kubernetes manifest checks: render with real kustomize (render.ts),
 * validate against the Kubernetes schemas (schema.ts), and run the
 * platform's deployment policies (policies/).
 */
export * from "./render.js";
export { schemaErrors, unknownFieldErrors } from "./schema.js";
export type { PlatformFacts, ServiceFacts } from "./facts.js";
export { readPlatformFacts } from "./source-facts.js";
export { policies, policyViolations, type Policy } from "./policies/index.js";
export { readManifests, type EnvValue, type Manifests, type Workload } from "./manifests.js";
