export { createDatabase } from "./create-database.js";
export type { Database, DatabaseOptions, PoolStats, TransactionOptions } from "./create-database.js";
export type { Tx } from "./tx.js";
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
