import { readEnv, readServerConfig, type ServerConfig } from "@platform/runtime";

export interface PricingConfig {
  server: ServerConfig;
  databaseUrl: string;
  dbPoolMax: number;
  /** How long start-up waits for the database (first connection, migrations) before giving up. */
  dbStartupTimeoutMs: number;
  /** Load the demo catalogue (seed/demo-catalogue.sql) at start: `npm start` and the tests, never production by default. */
  demoCatalogue: boolean;
}

export function loadConfig(env: Record<string, string | undefined>): PricingConfig {
  return readEnv(env, (r) => ({
    server: readServerConfig(r, "pricing", { port: 8083, adminPort: 9083 }),
    databaseUrl: r.postgresUrl("DATABASE_URL", undefined, { password: "DATABASE_PASSWORD" }),
    dbPoolMax: r.int("DB_POOL_MAX", 10, { min: 1, max: 200 }),
    dbStartupTimeoutMs: r.int("DB_STARTUP_TIMEOUT_MS", 60_000, { min: 0, max: 3_600_000 }),
    demoCatalogue: r.boolean("DEMO_CATALOGUE", false),
  }));
}
