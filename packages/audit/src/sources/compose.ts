import { readFileSync } from "node:fs";
import { parse } from "yaml";
import type { SetVariable, Target } from "../model.js";
import { shownPath } from "../service-modules.js";
import { buildTarget, secretPlaceholder, type DeployedService } from "./build-target.js";

/**
 * A compose file's services (those whose environment names a SERVICE, the
 * image's entry point) and their environments. `${VAR:-default}` takes its
 * default; any other `${VAR...}` is a value passed in at `up` time (.env,
 * passwords): it becomes a placeholder, never read.
 */
export function composeServices(file: string): DeployedService[] {
  const doc = parse(readFileSync(file, "utf8"), { merge: true }) as { services?: Record<string, { environment?: unknown }> };
  const shown = shownPath(file);
  const out: DeployedService[] = [];
  for (const [key, svc] of Object.entries(doc.services ?? {})) {
    const raw = svc.environment;
    const pairs: [string, string][] = Array.isArray(raw)
      ? raw.map((e: string) => {
          const i = String(e).indexOf("=");
          return [String(e).slice(0, i), String(e).slice(i + 1)];
        })
      : Object.entries((raw ?? {}) as Record<string, unknown>).map(([k, v]) => [k, v === null ? "" : String(v)]);
    const env: Record<string, SetVariable> = {};
    for (const [k, v] of pairs) env[k] = { value: interpolate(k, v), source: `${shown}: services.${key}.environment` };
    const name = env["SERVICE"]?.value;
    if (name !== undefined) out.push({ name, env, where: `${shown}: services.${key}` });
  }
  return out;
}

function interpolate(variable: string, value: string): string {
  if (!value.includes("${")) return value;
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?[^}]*\}/g, (_m, _name: string, fallback: string | undefined) =>
    fallback !== undefined ? fallback : variable === "DATABASE_URL" ? "redacted" : secretPlaceholder(variable),
  );
}

export function composeTarget(file: string): Promise<Target> {
  const shown = shownPath(file);
  return buildTarget(`compose ${shown}`, `${shown} (docker compose)`, composeServices(file));
}
