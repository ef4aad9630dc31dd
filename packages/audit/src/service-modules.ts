import { existsSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { DescService } from "@bufbuild/protobuf";
import { readServiceManifests } from "@platform/registry";
import { ConfigError, generatedService, redactConfig } from "@platform/runtime";

/** The repository the audit belongs to: services/, deploy/, docker-compose.yml. */
export const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));

/** A path as the report shows it: relative to the repository when inside it, absolute otherwise. */
export function shownPath(path: string): string {
  const r = relative(repoRoot, path);
  return r === "" || r.startsWith("..") ? path : r;
}

export function configFile(service: string): string {
  return join("services", service, "src", "config.ts");
}

/**
 * Runs a service's own config loader (services/<name>/src/config.ts,
 * `loadConfig(env)`) on an environment: the defaults, validation and
 * derived values it will really start with. Returns its output redacted,
 * the shape GET /admin/config serves, or the loader's problems when it
 * would refuse to start.
 */
export async function loadServiceConfig(service: string, env: Record<string, string>): Promise<{ config: unknown } | { problems: string[] }> {
  const file = join(repoRoot, configFile(service));
  if (!existsSync(file)) return { problems: [`no ${configFile(service)}: not a platform service`] };
  const mod = (await import(pathToFileURL(file).href)) as { loadConfig?: (env: Record<string, string | undefined>) => unknown };
  if (typeof mod.loadConfig !== "function") return { problems: [`${configFile(service)} exports no loadConfig(env)`] };
  try {
    return { config: redactConfig(mod.loadConfig(env)) };
  } catch (e) {
    if (e instanceof ConfigError) return { problems: e.problems };
    throw e;
  }
}

/**
 * The APIs a service serves, from its manifest (service.json `apis`, which
 * its routes are derived from): the methods and their idempotency levels,
 * from the proto.
 */
export async function servedApis(service: string): Promise<DescService[]> {
  const manifest = readServiceManifests(repoRoot).find((m) => m.name === service);
  return (manifest?.apis ?? []).map(generatedService);
}
