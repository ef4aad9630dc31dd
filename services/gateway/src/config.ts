import { Code } from "@connectrpc/connect";
import { serviceDefaults } from "@platform/registry";
import { defaultRetryPolicy, type RetryPolicy } from "@platform/resilience";
import {
  readAuthConfig,
  readCorsConfig,
  readDependencyConfig,
  readEnv,
  readIntakeConfig,
  readRateLimitConfig,
  readServerConfig,
  readTenantQuotaConfig,
  type AuthConfig,
  type CorsConfig,
  type DependencyConfig,
  type IntakeConfig,
  type RateLimitConfig,
  type ServerConfig,
  type TenantQuotaConfig,
} from "@platform/runtime";
import { forwardedApis, type ForwardedApi } from "./forwarded-apis.js";

export interface GatewayConfig {
  server: ServerConfig;
  checkout: DependencyConfig;
  /** One per forwarded API, in the order of forwardedApis. */
  forwarded: { api: ForwardedApi; dependency: DependencyConfig }[];
  intake: IntakeConfig;
  edge: { auth: AuthConfig; rateLimit: RateLimitConfig; tenantQuota: TenantQuotaConfig; cors: CorsConfig };
  retry: {
    policy: RetryPolicy;
    budget: { percentCanRetry: number; minRetriesPerSec: number; ttlMs: number };
    /** Hedged reads (HEDGE_READS, off by default; HEDGE_QUANTILE): docs/scaling.md. */
    hedge?: { quantile: number };
  };
}

/** Ports and bulkheads: the manifest's (service.json, beside src/ and dist/ alike). */
export const defaults = serviceDefaults(new URL("../service.json", import.meta.url));

export function loadConfig(env: Record<string, string | undefined>, apis: readonly ForwardedApi[] = forwardedApis): GatewayConfig {
  return readEnv(env, (r) => ({
    // The edge: requests without a deadline are normal here and get DEADLINE_DEFAULT_MS (3 s).
    server: readServerConfig(r, defaults.name, defaults.server),
    // The outermost hop toward the chain: room for everything checkout can
    // hold for us (its own slots toward orders and pricing), so a slow hop
    // further down fills its own slots first (docs/isolation.md).
    checkout: readDependencyConfig(r, ...defaults.dependency("checkout")),
    forwarded: apis.map((api) => ({ api, dependency: readDependencyConfig(r, api.dependency, api.defaultUrl, api.bulkhead) })),
    intake: readIntakeConfig(r),
    edge: { auth: readAuthConfig(r), rateLimit: readRateLimitConfig(r), tenantQuota: readTenantQuotaConfig(r), cors: readCorsConfig(r) },
    // The only retry policy in the platform; see README "Retries".
    retry: {
      policy: {
        maxAttempts: r.int("RETRY_MAX_ATTEMPTS", defaultRetryPolicy.maxAttempts, { min: 1, max: 10 }),
        retryableCodes: [Code.Unavailable, Code.ResourceExhausted],
        backoff: {
          initialMs: r.int("RETRY_BACKOFF_INITIAL_MS", defaultRetryPolicy.backoff.initialMs, { min: 1, max: 60_000 }),
          multiplier: r.number("RETRY_BACKOFF_MULTIPLIER", defaultRetryPolicy.backoff.multiplier, { min: 1, max: 10 }),
          maxMs: r.int("RETRY_BACKOFF_MAX_MS", defaultRetryPolicy.backoff.maxMs, { min: 1, max: 600_000 }),
        },
      },
      budget: {
        percentCanRetry: r.number("RETRY_BUDGET_PERCENT", 0.1, { min: 0, max: 1 }),
        minRetriesPerSec: r.number("RETRY_BUDGET_MIN_PER_SEC", 1, { min: 0, max: 1000 }),
        ttlMs: r.int("RETRY_BUDGET_TTL_MS", 10_000, { min: 1000, max: 600_000 }),
      },
      ...(r.boolean("HEDGE_READS", false) ? { hedge: { quantile: r.int("HEDGE_QUANTILE", 95, { min: 50, max: 99 }) / 100 } } : {}),
    },
  }));
}
