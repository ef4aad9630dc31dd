import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { serviceNames, type ExtraService } from "./start-platform.js";

const defaultServicesDir = fileURLToPath(new URL("../../../services/", import.meta.url));

/**
 * The services beyond the four that `npm start` runs: every
 * services/<name>/service.json (the service manifest, docs/adding-a-service.md),
 * such as the examples and what `npm run new-service` copies from them:
 *
 *   { "name": "inventory", "ports": { "rpc": 8086, "admin": 9086 },
 *     "database": { "schema": "inventory", "role": "inventory" }, ... }
 *
 * Only the keys the launcher needs are read here; @platform/registry
 * validates the whole manifest. A folder without a manifest is not started
 * (a service being written by hand). A malformed one is an error naming the
 * file, rather than a service that silently does not start.
 */
export function discoverServices(servicesDir = defaultServicesDir): ExtraService[] {
  const out: ExtraService[] = [];
  for (const name of readdirSync(servicesDir).sort()) {
    const file = join(servicesDir, name, "service.json");
    if ((serviceNames as readonly string[]).includes(name) || !existsSync(file)) continue;
    let manifest: unknown;
    try {
      manifest = JSON.parse(readFileSync(file, "utf8"));
    } catch (e) {
      throw new Error(`${file}: not valid JSON (${e instanceof Error ? e.message : String(e)})`);
    }
    const { name: declared, ports, database } = (manifest ?? {}) as Record<string, unknown>;
    const { rpc, admin } = (ports ?? {}) as Record<string, unknown>;
    const isPort = (v: unknown): v is number => Number.isInteger(v) && (v as number) > 0 && (v as number) < 65536;
    if (declared !== name) throw new Error(`${file}: "name" must be the folder's name, ${JSON.stringify(name)}, got ${JSON.stringify(declared)}`);
    if (!isPort(rpc) || !isPort(admin) || rpc === admin) {
      throw new Error(`${file}: "ports" must be { "rpc": <1-65535>, "admin": <another port> }, got ${JSON.stringify(ports)}`);
    }
    if (database !== undefined && (typeof database !== "object" || database === null || typeof (database as { schema?: unknown }).schema !== "string")) {
      throw new Error(`${file}: "database" must be { "schema": ..., "role": ... } or absent, got ${JSON.stringify(database)}`);
    }
    out.push({ name, port: rpc, adminPort: admin, database: database !== undefined });
  }
  return out;
}
