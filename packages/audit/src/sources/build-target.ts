import { importPlugin, pluginSpecifiers } from "@platform/runtime";
import { configFile, loadServiceConfig, repoRoot } from "../service-modules.js";
import type { ServicePlugin, SetVariable, Target } from "../model.js";

/** A service's environment as a deployment sets it, with where each variable was set. */
export interface DeployedService {
  name: string;
  env: Record<string, SetVariable>;
  /** Where the service itself is declared, for "refused" findings. */
  where: string;
}

/**
 * Evaluates each service's own config loader on its environment. A secret
 * a deployment takes from elsewhere (a compose variable, a Kubernetes
 * Secret) arrives here as a placeholder: the audit never reads secrets.
 */
export async function buildTarget(name: string, origin: string, deployed: DeployedService[]): Promise<Target> {
  const target: Target = { name, origin, services: [], refused: [] };
  for (const d of deployed) {
    const env = Object.fromEntries(Object.entries(d.env).map(([k, v]) => secretFromFile(k, v.value)));
    const loaded = await loadServiceConfig(d.name, env);
    if ("problems" in loaded) {
      target.refused.push({ service: d.name, problems: loaded.problems, where: d.where });
      continue;
    }
    let plugins: ServicePlugin[];
    try {
      plugins = await pluginsOf(d.name, env);
    } catch (e) {
      target.refused.push({ service: d.name, problems: [e instanceof Error ? e.message : String(e)], where: d.env["PLATFORM_PLUGINS"]?.source ?? d.where });
      continue;
    }
    target.services.push({ name: d.name, config: loaded.config, env: d.env, defaultsFile: configFile(d.name), plugins });
  }
  return target;
}

/**
 * A `<VAR>_FILE` (a secret mounted as a file, which the service reads at
 * start) becomes `<VAR>` with a placeholder: the audit never reads it, and
 * the file exists only inside the container anyway.
 */
function secretFromFile(key: string, value: string): [string, string] {
  return key.endsWith("_FILE") && key.length > 5 ? [key.slice(0, -5), secretPlaceholder(key.slice(0, -5))] : [key, value];
}

/**
 * The plug-ins a service would load (PLATFORM_PLUGINS, paths relative to
 * the repository), each asked what it changes there. Imported, not
 * installed: the audit composes nothing.
 */
async function pluginsOf(service: string, env: Record<string, string>): Promise<ServicePlugin[]> {
  const out: ServicePlugin[] = [];
  for (const specifier of pluginSpecifiers(env)) {
    const plugin = await importPlugin(specifier, repoRoot);
    out.push({ name: plugin.name, effects: plugin.effects?.(service) ?? {} });
  }
  return out;
}

/** Stands in for a secret's value: a postgres URL where one is expected, so the loader accepts it. */
export function secretPlaceholder(variable: string): string {
  return variable === "DATABASE_URL" ? "postgres://from-a-secret@database.invalid:5432/platform" : "from-a-secret";
}
