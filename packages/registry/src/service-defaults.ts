import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Bulkhead, LoadedManifest, ServiceManifest } from "./manifest.js";
import { parseManifest } from "./parse-manifest.js";
import { ManifestError } from "./read-manifests.js";
import { callersOf } from "./graph.js";

/** readDependencyConfig's arguments after the reader: the dependency's name, its default URL and its bulkhead. */
export type DependencyDefaults = [name: string, defaultUrl: string, bulkhead: Bulkhead];

/**
 * What a service's config.ts defaults to, all of it from its manifest: the
 * manifest is the one place a port or a bulkhead is written (PORT,
 * ADMIN_PORT, `<NAME>_URL`, `<NAME>_MAX_CONCURRENT`... override them).
 */
export interface ServiceDefaults {
  name: string;
  /** readServerConfig's defaults: the manifest's ports, and whether this is the edge. */
  /** `callers`: who the manifests say calls this service (read from its siblings' manifests when asked). */
  server: { port: number; adminPort: number; edge: boolean; callers: () => string[] };
  /** The protobuf services it serves, fully qualified. */
  apis: readonly string[];
  /**
   * For a service its manifest lists under `dependencies`: where `npm start`
   * runs it (loopback, the rpc port in that service's own manifest, beside
   * this one) and the bulkhead this manifest gives it.
   */
  dependency(service: string): DependencyDefaults;
  /** The schema its migrations apply to; throws for a service whose manifest has no `database`. */
  schema(): string;
}

/**
 * The defaults in `manifestUrl` (a service's service.json; from config.ts,
 * `new URL("../service.json", import.meta.url)`, which src/ and the bundle
 * in dist/ resolve alike). Throws a ManifestError naming the file and every
 * problem when the manifest is missing or invalid.
 */
export function serviceDefaults(manifestUrl: URL): ServiceDefaults {
  const path = fileURLToPath(manifestUrl);
  const manifest = readManifest(path);
  return {
    name: manifest.name,
    server: {
      port: manifest.ports.rpc,
      adminPort: manifest.ports.admin,
      edge: manifest.edge,
      callers: () => callersOf(manifest.name, siblingManifests(dirname(dirname(path)))),
    },
    apis: manifest.apis,
    dependency(service) {
      const d = manifest.dependencies.find((x) => x.service === service);
      if (!d) {
        const listed = manifest.dependencies.map((x) => x.service).join(", ") || "none";
        throw new ManifestError([`${path}: dependencies: "${service}" is not listed (listed: ${listed}); add it with its bulkhead`]);
      }
      const callee = readManifest(join(dirname(dirname(path)), service, "service.json"));
      return [service, `http://127.0.0.1:${callee.ports.rpc}`, { maxConcurrent: d.maxConcurrent, minConcurrent: d.minConcurrent, maxQueue: d.maxQueue }];
    },
    schema() {
      if (!manifest.database) throw new ManifestError([`${path}: database: the service has no database (add { "schema": ..., "role": ... })`]);
      return manifest.database.schema;
    },
  };
}

/**
 * Every manifest beside this one (services/<name>/service.json), read as
 * this one is: the deployed image holds the manifests but not the protos
 * that readServiceManifests checks them against.
 */
function siblingManifests(servicesDir: string): LoadedManifest[] {
  return readdirSync(servicesDir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(join(servicesDir, e.name, "service.json")))
    .map((e) => e.name)
    .sort()
    .map((name) => {
      const file = join(servicesDir, name, "service.json");
      return { ...readManifest(file), file };
    });
}

function readManifest(path: string): ServiceManifest {
  if (!existsSync(path)) throw new ManifestError([`${path}: missing (each service's folder holds its manifest, service.json)`]);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (e) {
    throw new ManifestError([`${path}: not valid JSON (${e instanceof Error ? e.message : String(e)})`]);
  }
  const { manifest, problems } = parseManifest(raw, basename(dirname(path)));
  if (!manifest) throw new ManifestError(problems.map((p) => `${path}: ${p}`));
  return manifest;
}
