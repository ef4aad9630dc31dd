import { serviceDefaults } from "@platform/registry";
import { readEnv, readServerConfig, type ServerConfig } from "@platform/runtime";

export interface MailerConfig {
  server: ServerConfig;
  /** Idempotency keys remembered (MailerDeps.rememberKeys). */
  rememberKeys: number;
}

/** Ports: the manifest's (service.json, beside src/ and dist/ alike). */
export const defaults = serviceDefaults(new URL("../service.json", import.meta.url));

export function loadConfig(env: Record<string, string | undefined>): MailerConfig {
  return readEnv(env, (r) => ({
    server: readServerConfig(r, defaults.name, defaults.server),
    rememberKeys: r.int("MAILER_REMEMBER_KEYS", 1_000_000, { min: 1, max: 100_000_000 }),
  }));
}
