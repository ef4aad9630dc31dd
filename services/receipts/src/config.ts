import { readEnv, readServerConfig, type ServerConfig } from "@platform/runtime";

export interface ReceiptsConfig {
  server: ServerConfig;
  databaseUrl: string;
  dbPoolMax: number;
  /** How long start-up waits for the database (first connection, migrations) before giving up. */
  dbStartupTimeoutMs: number;
}

export function loadConfig(env: Record<string, string | undefined>): ReceiptsConfig {
  return readEnv(env, (r) => ({
    server: readServerConfig(r, "receipts", { port: 8084, adminPort: 9084, naiveCallTimeoutMs: 4000 }),
    databaseUrl: r.postgresUrl("DATABASE_URL"),
    dbPoolMax: r.int("DB_POOL_MAX", 10, { min: 1, max: 200 }),
    dbStartupTimeoutMs: r.int("DB_STARTUP_TIMEOUT_MS", 60_000, { min: 0, max: 3_600_000 }),
  }));
}
