import { readEnv, readServerConfig, type ServerConfig } from "@platform/runtime";

export interface MailerConfig {
  server: ServerConfig;
}

export function loadConfig(env: Record<string, string | undefined>): MailerConfig {
  return readEnv(env, (r) => ({
    server: readServerConfig(r, "mailer", { port: 8085, adminPort: 9085 }),
  }));
}
