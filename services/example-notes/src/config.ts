import type { DatabaseSettings } from "@platform/database";
import { serviceDefaults } from "@platform/registry";
import { readEnv, readServerConfig, type ServerConfig } from "@platform/runtime";

export interface ExampleNotesConfig extends DatabaseSettings {
  server: ServerConfig;
}

/**
 * Ports, bulkheads and the schema: the manifest's (service.json, beside src/
 * and dist/ alike), the one place they are written, which `npm start`,
 * compose and Kubernetes read too. PORT and ADMIN_PORT override the ports.
 */
export const defaults = serviceDefaults(new URL("../service.json", import.meta.url));

export function loadConfig(env: Record<string, string | undefined>): ExampleNotesConfig {
  return readEnv(env, (r) => ({
    server: readServerConfig(r, defaults.name, defaults.server),
    databaseUrl: r.postgresUrl("DATABASE_URL", undefined, { password: "DATABASE_PASSWORD" }),
    dbSchema: defaults.schema(),
    dbPoolMax: r.int("DB_POOL_MAX", 10, { min: 1, max: 200 }),
    dbStartupTimeoutMs: r.int("DB_STARTUP_TIMEOUT_MS", 60_000, { min: 0, max: 3_600_000 }),
  }));
}
