import { sendJson, type HttpEndpoint } from "../server/http-endpoints.js";
import { loadedConfig, wiredDependencyClients, type WiredDependencyClient } from "./loaded-config.js";
import { installedPluginEffects, type PluginEffects } from "./plugin.js";
import { redactConfig } from "./redact.js";

/**
 * What this process runs with, for `GET /admin/config` on the operator port
 * (read by `npm run audit -- --live`, docs/audit.md): the configuration its
 * loader produced (a service reads it once, at start, through `readEnv`),
 * and every dependency client it actually created, with the retry policy it
 * was wired with. Secrets never leave: see `redactConfig`.
 */
export interface EffectiveConfig {
  service: string;
  /** The last configuration `readEnv` produced in this process, redacted. */
  config: unknown;
  /** One per `createDependencyClient` call: what the audit cannot learn from configuration alone. */
  dependencyClients: WiredDependencyClient[];
  /** The plug-ins installed in the process (PLATFORM_PLUGINS), with what each changes. */
  plugins: { name: string; effects: PluginEffects }[];
}

export function effectiveConfig(service: string): EffectiveConfig {
  return {
    service,
    config: redactConfig(loadedConfig()),
    dependencyClients: wiredDependencyClients().map((c) => redactConfig(c) as WiredDependencyClient),
    plugins: installedPluginEffects(service),
  };
}

export function configEndpoint(service: string): Record<string, HttpEndpoint> {
  return { "GET /admin/config": (_req, res) => sendJson(res, 200, effectiveConfig(service)) };
}
