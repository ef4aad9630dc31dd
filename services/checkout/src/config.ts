import { serviceDefaults } from "@platform/registry";
import { readDependencyConfig, readEnv, readServerConfig, type DependencyConfig, type ServerConfig } from "@platform/runtime";

export interface CheckoutConfig {
  server: ServerConfig;
  orders: DependencyConfig;
  pricing: DependencyConfig;
}

/** Ports and bulkheads: the manifest's (service.json, beside src/ and dist/ alike). */
export const defaults = serviceDefaults(new URL("../service.json", import.meta.url));

export function loadConfig(env: Record<string, string | undefined>): CheckoutConfig {
  return readEnv(env, (r) => ({
    server: readServerConfig(r, defaults.name, defaults.server),
    // Per method class (reads, writes), sized in docs/isolation.md: more
    // than orders can hold toward pricing, less than the gateway gives us.
    orders: readDependencyConfig(r, ...defaults.dependency("orders")),
    pricing: readDependencyConfig(r, ...defaults.dependency("pricing")),
  }));
}
