import type { DatabaseSettings } from "@platform/database";
import { serviceDefaults } from "@platform/registry";
import { readEnv, readServerConfig, type ServerConfig } from "@platform/runtime";

export interface PricingConfig extends DatabaseSettings {
  server: ServerConfig;
  /** Load the demo catalogue (seed/demo-catalogue.sql) at start: `npm start` and the tests, never production by default. */
  demoCatalogue: boolean;
}

/** Ports and the schema: the manifest's (service.json, beside src/ and dist/ alike). */
export const defaults = serviceDefaults(new URL("../service.json", import.meta.url));

export function loadConfig(env: Record<string, string | undefined>): PricingConfig {
  return readEnv(env, (r) => ({
    server: readServerConfig(r, defaults.name, defaults.server),
    databaseUrl: r.postgresUrl("DATABASE_URL", undefined, { password: "DATABASE_PASSWORD" }),
    dbSchema: defaults.schema(),
    dbPoolMax: r.int("DB_POOL_MAX", 10, { min: 1, max: 200 }),
    dbStartupTimeoutMs: r.int("DB_STARTUP_TIMEOUT_MS", 60_000, { min: 0, max: 3_600_000 }),
    demoCatalogue: r.boolean("DEMO_CATALOGUE", false),
  }));
}
