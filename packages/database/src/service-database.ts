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

/** A service's config: its database settings, and its name (the pool is `<name>-db` in messages and metrics, `<name>` in pg_stat_activity). */
export type ServiceDatabaseConfig = DatabaseSettings & { server: { serviceName: string } };

export interface ServiceDatabaseOptions {
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
export function startServiceDatabase(config: ServiceDatabaseConfig, opts: ServiceDatabaseOptions): { db: Database; startup: DatabaseStartup } {
  const { logger } = opts;
  const service = config.server.serviceName;
  const db = createDatabase({
    name: `${service}-db`,
    connectionString: config.databaseUrl,
    maxConnections: config.dbPoolMax,
    applicationName: service,
    logger,
    ...opts.deadline,
  });
  const startup = migrateWhenReachable(db, {
    schema: config.dbSchema,
    directory: fileURLToPath(opts.migrations),
    budgetMs: config.dbStartupTimeoutMs,
    logger,
  });
  return { db, startup };
}
