import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { serviceNames, type ExtraService } from "./start-platform.js";

const defaultServicesDir = fileURLToPath(new URL("../../../services/", import.meta.url));

/**
 * The services beyond the four that `npm start` runs: every
 * services/<name>/package.json with a `platform` entry, as
 * `npm run new-service` writes it:
 *
 *   "platform": { "port": 8084, "adminPort": 9084, "database": true }
 *
 * A folder without the entry is not started (a library, or a service being
 * written by hand). A malformed entry is an error naming the file, rather
 * than a service that silently does not start.
 */
export function discoverServices(servicesDir = defaultServicesDir): ExtraService[] {
  const out: ExtraService[] = [];
  for (const name of readdirSync(servicesDir).sort()) {
    const file = join(servicesDir, name, "package.json");
    if ((serviceNames as readonly string[]).includes(name) || !existsSync(file)) continue;
    let manifest: unknown;
    try {
      manifest = JSON.parse(readFileSync(file, "utf8"));
    } catch (e) {
      throw new Error(`${file}: not valid JSON (${e instanceof Error ? e.message : String(e)})`);
    }
    const platform = (manifest as { platform?: unknown }).platform;
    if (platform === undefined) continue;
    const { port, adminPort, database } = (platform ?? {}) as Record<string, unknown>;
    const isPort = (v: unknown): v is number => Number.isInteger(v) && (v as number) > 0 && (v as number) < 65536;
    if (!isPort(port) || !isPort(adminPort) || port === adminPort || (database !== undefined && typeof database !== "boolean")) {
      throw new Error(`${file}: "platform" must be { "port": <1-65535>, "adminPort": <another port>, "database": true|false }, got ${JSON.stringify(platform)}`);
    }
    out.push({ name, port, adminPort, database: database === true });
  }
  return out;
}
