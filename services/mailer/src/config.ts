import { readEnv, readServerConfig, type ServerConfig } from "@platform/runtime";

export interface MailerConfig {
  server: ServerConfig;
  /** Idempotency keys remembered (MailerDeps.rememberKeys). */
  rememberKeys: number;
}

export function loadConfig(env: Record<string, string | undefined>): MailerConfig {
  return readEnv(env, (r) => ({
    server: readServerConfig(r, "mailer", { port: 8085, adminPort: 9085 }),
    rememberKeys: r.int("MAILER_REMEMBER_KEYS", 1_000_000, { min: 1, max: 100_000_000 }),
  }));
}
