import { fileURLToPath } from "node:url";
import type { DatabaseLogger } from "./connection-watch.js";
import { createDatabase, type Database } from "./create-database.js";
import { migrateWhenReachable, type DatabaseStartup } from "./startup.js";

/** What a service with a database reads into its config (DATABASE_URL, DB_POOL_MAX, DB_STARTUP_TIMEOUT_MS; the schema from its manifest). */
export interface DatabaseSettings {
  databaseUrl: string;
  /** The schema it owns, which its migrations create and fill. */
  dbSchema: string;
  /** Its pool: the database's bulkhead. */
  dbPoolMax: number;
  /** How long start-up waits for the database (first connection, migrations) before giving up. */
  dbStartupTimeoutMs: number;
}

export interface ServiceDatabaseOptions {
  /** The service: the pool is `<service>-db` in messages and metrics, `<service>` in pg_stat_activity. */
  service: string;
  settings: DatabaseSettings;
  /** Its migrations: `new URL("../migrations", import.meta.url)` from main.ts (src/ and the bundle in dist/ alike). */
  migrations: URL;
  /** The service's own deadline settings (@platform/runtime's `databaseDeadlineOptions`). */
  deadline: { minBudgetMs: number; statementReserveMs: number };
  logger: DatabaseLogger & { info(o: object, m: string): void };
}

/**
 * A service's database as every service with one starts it: its pool, and
 * its start-up (wait for the database with backoff, then its migrations,
 * within dbStartupTimeoutMs). Hand `startup.ready` to `serve({ startup })`,
 * which listens NOT_SERVING meanwhile; on shutdown call `startup.cancel()`,
 * then `db.close()`.
 */
export function startServiceDatabase(opts: ServiceDatabaseOptions): { db: Database; startup: DatabaseStartup } {
  const { settings, logger } = opts;
  const db = createDatabase({
    name: `${opts.service}-db`,
    connectionString: settings.databaseUrl,
    maxConnections: settings.dbPoolMax,
    applicationName: opts.service,
    logger,
    ...opts.deadline,
  });
  const startup = migrateWhenReachable(db, {
    schema: settings.dbSchema,
    directory: fileURLToPath(opts.migrations),
    budgetMs: settings.dbStartupTimeoutMs,
    logger,
  });
  return { db, startup };
}
