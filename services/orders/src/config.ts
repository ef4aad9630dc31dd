import type { DatabaseSettings } from "@platform/database";
import { serviceDefaults } from "@platform/registry";
import { readDependencyConfig, readEnv, readServerConfig, type DependencyConfig, type ServerConfig } from "@platform/runtime";

export interface OrdersConfig extends DatabaseSettings {
  server: ServerConfig;
  pricing: DependencyConfig;
  /** How long an idempotency key is remembered. */
  idempotencyRetentionHours: number;
}

/** Ports, bulkheads and the schema: the manifest's (service.json, beside src/ and dist/ alike). */
export const defaults = serviceDefaults(new URL("../service.json", import.meta.url));

export function loadConfig(env: Record<string, string | undefined>): OrdersConfig {
  return readEnv(env, (r) => ({
    server: readServerConfig(r, defaults.name, defaults.server),
    databaseUrl: r.postgresUrl("DATABASE_URL", undefined, { password: "DATABASE_PASSWORD" }),
    dbSchema: defaults.schema(),
    dbPoolMax: r.int("DB_POOL_MAX", 10, { min: 1, max: 200 }),
    dbStartupTimeoutMs: r.int("DB_STARTUP_TIMEOUT_MS", 60_000, { min: 0, max: 3_600_000 }),
    // The deepest hop toward pricing, per method: the fewest slots and the
    // shortest queue, so that a slow pricing fills these first and never the
    // hops above (docs/isolation.md).
    pricing: readDependencyConfig(r, ...defaults.dependency("pricing")),
    idempotencyRetentionHours: r.int("IDEMPOTENCY_RETENTION_HOURS", 24, { min: 1, max: 24 * 90 }),
  }));
}
