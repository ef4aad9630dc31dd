export { defaultBulkhead, envPrefix, type Bulkhead, type DependencyManifest, type LoadedManifest, type ServiceManifest } from "./manifest.js";
export { serviceDefaults, type DependencyDefaults, type ServiceDefaults } from "./service-defaults.js";
export { parseManifest } from "./parse-manifest.js";
export { dependencyOrder, findCycle, registryProblems } from "./check-registry.js";
export { protoApis } from "./proto-apis.js";
export { ManifestError, readServiceManifests, repositoryRoot } from "./read-manifests.js";
export { callDepth, callersOf, effectiveDependencies, forwardedApis, passwordSecret } from "./graph.js";
export {
  connectionBudget,
  defaultPoolMax,
  minPoolMax,
  planDatabasePools,
  postgresServersFile,
  readPostgresServers,
  type PoolPlan,
  type PostgresServer,
} from "./database-budget.js";
