import { readFileSync } from "node:fs";
import { readEnv, readServerConfig, type ServerConfig } from "@platform/runtime";

export interface ExampleEchoConfig {
  server: ServerConfig;
}

/**
 * The default ports are the manifest's (service.json, beside src/ and
 * dist/ alike): the one place they are written, which `npm start`,
 * compose and Kubernetes read too. PORT and ADMIN_PORT override them.
 */
const manifest = JSON.parse(readFileSync(new URL("../service.json", import.meta.url), "utf8")) as { ports: { rpc: number; admin: number } };

export function loadConfig(env: Record<string, string | undefined>): ExampleEchoConfig {
  return readEnv(env, (r) => ({
    server: readServerConfig(r, "example-echo", { port: manifest.ports.rpc, adminPort: manifest.ports.admin }),
  }));
}
