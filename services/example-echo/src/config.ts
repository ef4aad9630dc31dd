import { serviceDefaults } from "@platform/registry";
import { readEnv, readServerConfig, type ServerConfig } from "@platform/runtime";

export interface ExampleEchoConfig {
  server: ServerConfig;
}

/**
 * Ports and bulkheads: the manifest's (service.json, beside src/ and dist/
 * alike), the one place they are written, which `npm start`, compose and
 * Kubernetes read too. PORT and ADMIN_PORT override the ports. A service it
 * calls is listed in the manifest and read here with
 * `readDependencyConfig(r, ...defaults.dependency("<name>"))`.
 */
export const defaults = serviceDefaults(new URL("../service.json", import.meta.url));

export function loadConfig(env: Record<string, string | undefined>): ExampleEchoConfig {
  return readEnv(env, (r) => ({
    server: readServerConfig(r, defaults.name, defaults.server),
  }));
}
