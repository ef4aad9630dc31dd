import { readFileSync } from "node:fs";
import { readEnv, readServerConfig, type ServerConfig } from "@platform/runtime";

export interface ExampleNotesConfig {
  server: ServerConfig;
  databaseUrl: string;
  dbPoolMax: number;
  /** How long start-up waits for the database (first connection, migrations) before giving up. */
  dbStartupTimeoutMs: number;
}

/**
 * The default ports and the schema are the manifest's (service.json, beside
 * src/ and dist/ alike): the one place they are written, which `npm start`,
 * compose and Kubernetes read too. PORT and ADMIN_PORT override the ports.
 */
export const manifest = JSON.parse(readFileSync(new URL("../service.json", import.meta.url), "utf8")) as {
  ports: { rpc: number; admin: number };
  database: { schema: string; role: string };
};

export function loadConfig(env: Record<string, string | undefined>): ExampleNotesConfig {
  return readEnv(env, (r) => ({
    server: readServerConfig(r, "example-notes", { port: manifest.ports.rpc, adminPort: manifest.ports.admin }),
    databaseUrl: r.postgresUrl("DATABASE_URL"),
    dbPoolMax: r.int("DB_POOL_MAX", 10, { min: 1, max: 200 }),
    dbStartupTimeoutMs: r.int("DB_STARTUP_TIMEOUT_MS", 60_000, { min: 0, max: 3_600_000 }),
  }));
}
