import type { ConnectError } from "@connectrpc/connect";
import { quotaExceededError } from "../refusals.js";
import type { EnvReader } from "../config/config.js";
import { RateLimiter, type RateLimitConfig } from "./rate-limit.js";

export interface TenantQuotaConfig {
  /** Every tenant's quota unless overridden; perSecond 0 turns quotas off (overrides still apply). */
  defaults: RateLimitConfig;
  /** Quotas of named tenants. */
  overrides: Map<string, RateLimitConfig>;
  /** Tenants with a metric series of their own; the rest are counted as "other". */
  metricsTopN: number;
}

/**
 * TENANT_QUOTA_PER_SEC and TENANT_QUOTA_BURST (the default), and
 * TENANT_QUOTA_OVERRIDES="acme=200:400,trial=2" (tenant=perSecond[:burst];
 * the burst defaults to the rate, rounded up).
 */
export function readTenantQuotaConfig(r: EnvReader): TenantQuotaConfig {
  const perSecond = r.number("TENANT_QUOTA_PER_SEC", 0, { min: 0, max: 1_000_000 });
  const defaults = { perSecond, burst: r.int("TENANT_QUOTA_BURST", Math.max(1, Math.ceil(perSecond)), { min: 1, max: 1_000_000 }) };
  const overrides = new Map<string, RateLimitConfig>();
  const raw = r.optionalString("TENANT_QUOTA_OVERRIDES");
  for (const entry of raw === undefined ? [] : raw.split(",")) {
    const m = /^\s*([A-Za-z0-9._:@|-]{1,128})\s*=\s*(\d+(?:\.\d+)?)(?::(\d+))?\s*$/.exec(entry);
    const rate = Number(m?.[2]);
    const burst = m?.[3] === undefined ? Math.max(1, Math.ceil(rate)) : Number(m[3]);
    if (!m || burst < 1) {
      r.problems.push(`TENANT_QUOTA_OVERRIDES: "${entry.trim()}" is not tenant=perSecond[:burst] (burst at least 1)`);
      continue;
    }
    overrides.set(m[1]!, { perSecond: rate, burst });
  }
  return { defaults, overrides, metricsTopN: r.int("TENANT_METRICS_TOP_N", 20, { min: 0, max: 1000 }) };
}

/**
 * A token bucket per tenant: one busy tenant spends its own quota, not
 * everyone's. Tenants without an override share the default's settings,
 * each with a bucket of its own (RateLimiter, bounded in memory).
 */
export class TenantQuotas {
  private readonly byDefault: RateLimiter;
  private readonly overridden = new Map<string, RateLimiter>();

  constructor(
    readonly config: TenantQuotaConfig,
    now?: () => number,
  ) {
    this.byDefault = new RateLimiter(config.defaults, now);
    for (const [tenant, quota] of config.overrides) this.overridden.set(tenant, new RateLimiter(quota, now, 1));
  }

  /** The tenant's quota. */
  quotaOf(tenant: string): RateLimitConfig {
    return this.config.overrides.get(tenant) ?? this.config.defaults;
  }

  /** 0 when the tenant's request may proceed, else how long (ms) until it could. */
  take(tenant: string): number {
    return (this.overridden.get(tenant) ?? this.byDefault).take(tenant);
  }
}

/**
 * The refusal of a request over its tenant's quota: resource_exhausted with
 * the platform's pushback (retry-after, grpc-retry-pushback-ms), naming
 * the quota, so the client knows it is its own rate, not the platform's
 * load. The one place a quota refusal is made.
 */
export function quotaExceeded(tenant: string, quota: RateLimitConfig, retryAfterMs: number): ConnectError {
  return quotaExceededError(tenant, retryAfterMs, `${quota.perSecond} requests per second (burst ${quota.burst})`);
}
