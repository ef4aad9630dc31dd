import { readEnv, readServerConfig, type ServerConfig } from "@platform/runtime";

export interface CheckoutConfig {
  server: ServerConfig;
  ordersUrl: string;
  pricingUrl: string;
}

export function loadConfig(env: Record<string, string | undefined>): CheckoutConfig {
  return readEnv(env, (r) => ({
    server: readServerConfig(r, "checkout", { port: 8081, adminPort: 9081 }),
    ordersUrl: r.url("ORDERS_URL", "http://127.0.0.1:8082"),
    pricingUrl: r.url("PRICING_URL", "http://127.0.0.1:8083"),
  }));
}
