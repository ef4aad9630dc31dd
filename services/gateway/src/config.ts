import { readEnv, readServerConfig, type ServerConfig } from "@platform/runtime";

export interface GatewayConfig {
  server: ServerConfig;
  checkoutUrl: string;
}

export function loadConfig(env: Record<string, string | undefined>): GatewayConfig {
  return readEnv(env, (r) => ({
    // The edge: requests without a deadline are normal here and get DEADLINE_DEFAULT_MS (3 s).
    server: readServerConfig(r, "gateway", { port: 8080, adminPort: 9080, edge: true }),
    checkoutUrl: r.url("CHECKOUT_URL", "http://127.0.0.1:8081"),
  }));
}
