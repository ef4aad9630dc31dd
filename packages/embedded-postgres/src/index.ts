export { startEmbeddedPostgres } from "./start-embedded-postgres.js";
export type { EmbeddedPostgres, EmbeddedPostgresOptions, StopMode } from "./start-embedded-postgres.js";
export { findFreePort } from "./free-port.js";
export { supportedPlatforms } from "./platform-binaries.js";
export { testClusterTemplates } from "./cluster-template.js";
