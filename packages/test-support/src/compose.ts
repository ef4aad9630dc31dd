/**
 * docker-compose.yml as compose reads it (YAML merge keys: the services
 * share `x-service`), with `${VAR}`, `${VAR:?message}` and `${VAR:-default}`
 * resolved from the given values, as compose does from .env.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type * as Yaml from "yaml";

/** Loaded on first use: every test file imports this package, and few read the compose file. */
let yaml: typeof Yaml | undefined;
const yamlModule = () => (yaml ??= createRequire(import.meta.url)("yaml") as typeof Yaml);

export interface ComposeService {
  environment?: Record<string, string | number> | string[];
  healthcheck?: { test?: unknown; interval?: string };
  command?: unknown;
  depends_on?: unknown;
}

export function readCompose(root: string): { services: Record<string, ComposeService>; secrets?: Record<string, { file?: string }> } {
  return yamlModule().parse(readFileSync(join(root, "docker-compose.yml"), "utf8"), { merge: true }) as {
    services: Record<string, ComposeService>;
    secrets?: Record<string, { file?: string }>;
  };
}

/** A service's environment with every variable resolved; a required one `values` does not give is an error, as in compose. */
export function composeEnvironment(service: ComposeService, values: (name: string) => string | undefined): Record<string, string> {
  const raw = service.environment ?? {};
  const entries: [string, string][] = Array.isArray(raw)
    ? raw.map((l) => [l.split("=")[0]!, l.slice(l.indexOf("=") + 1)])
    : Object.entries(raw).map(([k, v]) => [k, String(v)]);
  return Object.fromEntries(
    entries.map(([k, v]) => [
      k,
      v.replace(/\$\{(\w+)(?::([?-])([^}]*))?\}/g, (_all, name: string, op: string | undefined, arg: string | undefined) => {
        const given = values(name);
        if (given !== undefined) return given;
        if (op === "-") return arg ?? "";
        throw new Error(`docker-compose.yml: ${k} needs ${name}${op === "?" ? ` (${arg})` : ""}`);
      }),
    ]),
  );
}
