import { readDependencyConfig, readEnv, readServerConfig, type DependencyConfig, type ServerConfig } from "@platform/runtime";

export interface OrdersConfig {
  server: ServerConfig;
  databaseUrl: string;
  dbPoolMax: number;
  /** How long start-up waits for the database (first connection, migrations) before giving up. */
  dbStartupTimeoutMs: number;
  pricing: DependencyConfig;
  /** How long an idempotency key is remembered. */
  idempotencyRetentionHours: number;
}

export function loadConfig(env: Record<string, string | undefined>): OrdersConfig {
  return readEnv(env, (r) => ({
    server: readServerConfig(r, "orders", { port: 8082, adminPort: 9082 }),
    databaseUrl: r.postgresUrl("DATABASE_URL", undefined, { password: "DATABASE_PASSWORD" }),
    dbPoolMax: r.int("DB_POOL_MAX", 10, { min: 1, max: 200 }),
    dbStartupTimeoutMs: r.int("DB_STARTUP_TIMEOUT_MS", 60_000, { min: 0, max: 3_600_000 }),
    // The deepest hop toward pricing, per method: the fewest slots and the
    // shortest queue, so that a slow pricing fills these first and never the
    // hops above (docs/isolation.md).
    pricing: readDependencyConfig(r, "pricing", "http://127.0.0.1:8083", { maxConcurrent: 10, minConcurrent: 3, maxQueue: 32 }),
    idempotencyRetentionHours: r.int("IDEMPOTENCY_RETENTION_HOURS", 24, { min: 1, max: 24 * 90 }),
  }));
}
