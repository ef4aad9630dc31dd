export { createDatabase, useDatabaseFactory } from "./create-database.js";
export type { Database, DatabaseFactory, DatabaseOptions, PoolStats, TransactionOptions } from "./create-database.js";
// Building blocks for a database plug-in (useDatabaseFactory): the same metrics, connection safety and injected faults.
export { databaseMetrics, type PoolStatsSource } from "./metrics.js";
export { watchedClientClass } from "./connection-watch.js";
export { connectionFailureReason } from "./to-connect-error.js";
export { serverFaultNow, unreachableNow } from "./fault-now.js";
export type { Tx } from "./tx.js";
export { databaseResources } from "./health-check.js";
export { toConnectError } from "./to-connect-error.js";
export { migrate, MigrationChangedError, noTransactionMarker } from "./migrate.js";
export type { MigrateOptions, MigrateResult } from "./migrate.js";
export { type ConnectionLoss, type DatabaseLogger, type LossCause, lossCauseOf, reportConnectionLoss } from "./connection-watch.js";
export {
  retryDuringStartup,
  waitForDatabase,
  migrateWhenReachable,
  isTransientStartupError,
  defaultStartupBackoff,
  type StartupRetryOptions,
  type DatabaseStartup,
} from "./startup.js";
export { startServiceDatabase, type DatabaseSettings, type ServiceDatabaseConfig, type ServiceDatabaseOptions } from "./service-database.js";
