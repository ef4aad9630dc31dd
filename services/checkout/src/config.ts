import { readDependencyConfig, readEnv, readServerConfig, type DependencyConfig, type ServerConfig } from "@platform/runtime";

export interface CheckoutConfig {
  server: ServerConfig;
  orders: DependencyConfig;
  pricing: DependencyConfig;
}

export function loadConfig(env: Record<string, string | undefined>): CheckoutConfig {
  return readEnv(env, (r) => ({
    server: readServerConfig(r, "checkout", { port: 8081, adminPort: 9081 }),
    // Per method class (reads, writes), sized in docs/isolation.md: more
    // than orders can hold toward pricing, less than the gateway gives us.
    orders: readDependencyConfig(r, "orders", "http://127.0.0.1:8082", { maxConcurrent: 48, minConcurrent: 6, maxQueue: 16 }),
    pricing: readDependencyConfig(r, "pricing", "http://127.0.0.1:8083", { maxConcurrent: 16, minConcurrent: 4, maxQueue: 32 }),
  }));
}
