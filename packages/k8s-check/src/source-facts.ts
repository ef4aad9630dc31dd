/**
 * The platform's facts read from this repository's source: what each
 * service's config reads (the literal first argument of its readers, e.g.
 * r.int("PORT", ...)), whether it uses the database, and the code's
 * defaults. A name built at run time is not seen, except the one such case,
 * per-dependency settings, which are derived below.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { PlatformFacts, ServiceFacts } from "./facts.js";

const serverConfigFile = "packages/runtime/src/config/server-config.ts";
const dependencyConfigFile = "packages/runtime/src/client/dependency-config.ts";

function envNamesIn(text: string): Set<string> {
  return new Set([...text.matchAll(/\.\w+\(\s*"([A-Z][A-Z0-9_]*)"/g)].map((m) => m[1] ?? ""));
}

/** The default a config file gives a numeric variable, e.g. r.int("DRAIN_TIMEOUT_MS", 10_000, ...). */
function codeDefault(text: string, file: string, name: string): number {
  const m = new RegExp(`"${name}",\\s*([0-9_]+)`).exec(text);
  if (m?.[1] === undefined) throw new Error(`${file} has no numeric default for ${name}`);
  return Number(m[1].replaceAll("_", ""));
}

/**
 * What a service reads: the server settings, its own config's names and, for
 * each service its manifest lists under `dependencies` (and each API the gateway
 * forwards, services/gateway/src/forwarded-apis.generated.ts), the per-dependency names
 * (ORDERS_URL, ORDERS_MAX_CONCURRENT, ... from the `${prefix}_X` templates of
 * dependency-config.ts) plus that file's shared names (BREAKER_*).
 */
function serviceFacts(root: string, service: string, callers: string[]): ServiceFacts {
  const read = (path: string) => readFileSync(join(root, path), "utf8");
  const file = `services/${service}/src/config.ts`;
  const text = read(file);
  const own = envNamesIn(text);
  // Its config reads one dependency config per service its manifest lists (test/service-artifacts.test.ts holds them to it).
  const manifestFile = `services/${service}/service.json`;
  const listed = existsSync(join(root, manifestFile)) ? (JSON.parse(read(manifestFile)) as { dependencies?: { service: string }[] }).dependencies : [];
  const named = (listed ?? []).map((d) => d.service);
  // The gateway's forwarded APIs: generated from the manifests (forwarded-apis.generated.ts), or written by hand.
  const forwarded = [`services/${service}/src/forwarded-apis.generated.ts`, `services/${service}/src/forwarded-apis.ts`]
    .filter((f) => existsSync(join(root, f)))
    .flatMap((f) => [...read(f).matchAll(/\bdependency:\s*"([^"]+)"/g)].map((m) => m[1] ?? ""));
  const dependencies = [...named, ...forwarded].map((n) => n.toUpperCase().replace(/[^A-Z0-9]/g, "_"));
  const perDependency: string[] = [];
  if (dependencies.length > 0) {
    const dependencyText = read(dependencyConfigFile);
    const suffixes = [...dependencyText.matchAll(/`\$\{\w+\}(_[A-Z0-9_]+)`/g)].map((m) => m[1] ?? "");
    perDependency.push(...envNamesIn(dependencyText), ...dependencies.flatMap((prefix) => suffixes.map((suffix) => prefix + suffix)));
  }
  // SERVICE picks the entry point (Dockerfile CMD); the rest are the image's.
  const read_ = [...envNamesIn(read(serverConfigFile)), ...own, ...perDependency];
  // Every setting can also come from a file: <VAR>_FILE (packages/runtime/src/config/config.ts).
  const env = new Set([...read_, ...read_.map((v) => `${v}_FILE`), "SERVICE", "NODE_OPTIONS", "NODE_ENV", "TSX_DISABLE_CACHE"]);
  const needsDatabase = own.has("DATABASE_URL");
  return { callers, env, needsDatabase, ...(needsDatabase ? { dbPoolMaxDefault: codeDefault(text, file, "DB_POOL_MAX") } : {}) };
}

/**
 * The facts for the services of `callGraph` (service -> its callers), read
 * from the repository at `root`. `publicService` is the one whose RPC port
 * may leave the cluster (a service nobody calls yet is not public).
 */
export function readPlatformFacts(root: string, callGraph: Record<string, string[]>, publicService: string): PlatformFacts {
  if (!(publicService in callGraph)) throw new Error(`the public service ${publicService} is not in the call graph (${Object.keys(callGraph).join(", ")})`);
  return {
    partOf: "resilient-platform",
    publicService,
    services: Object.fromEntries(Object.entries(callGraph).map(([name, callers]) => [name, serviceFacts(root, name, callers)])),
    defaultDrainMs: codeDefault(readFileSync(join(root, serverConfigFile), "utf8"), serverConfigFile, "DRAIN_TIMEOUT_MS"),
    shutdownSlackSeconds: 2,
    // PostgreSQL's default max_connections (100) less superuser_reserved_connections (3)
    // and room for psql and maintenance. Raise it with your server's max_connections,
    // or when PgBouncer sits in between (docs/scaling.md).
    databaseConnectionBudget: 90,
    databaseSecret: "platform-database",
    runAsUser: 1000,
  };
}
