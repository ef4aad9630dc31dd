import type { EnvReader } from "../config/config.js";

export interface RateLimitConfig {
  /** Sustained requests per second per client; 0 turns limiting off. */
  perSecond: number;
  /** Requests a client may send at once above the sustained rate. */
  burst: number;
}

export function readRateLimitConfig(r: EnvReader): RateLimitConfig {
  const perSecond = r.number("RATE_LIMIT_PER_SEC", 0, { min: 0, max: 1_000_000 });
  return { perSecond, burst: r.int("RATE_LIMIT_BURST", Math.max(1, Math.ceil(perSecond)), { min: 1, max: 1_000_000 }) };
}

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * A token bucket per client (API key id, or remote address when
 * unauthenticated), so one noisy client cannot take everyone's capacity.
 * Memory is bounded: idle buckets are full anyway and are forgotten, and
 * at most `maxClients` are tracked (the least recently seen go first).
 */
export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly config: RateLimitConfig,
    private readonly now: () => number = () => performance.now(),
    private readonly maxClients = 100_000,
  ) {}

  /** 0 when the request may proceed, else how long (ms) until it could. */
  take(client: string): number {
    if (this.config.perSecond <= 0) return 0;
    const now = this.now();
    const b = this.buckets.get(client) ?? { tokens: this.config.burst, at: now };
    b.tokens = Math.min(this.config.burst, b.tokens + ((now - b.at) / 1000) * this.config.perSecond);
    b.at = now;
    this.buckets.delete(client); // re-insert: Map order is recency order
    this.buckets.set(client, b);
    if (this.buckets.size > this.maxClients) this.buckets.delete(this.buckets.keys().next().value!);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - b.tokens) / this.config.perSecond) * 1000);
  }
}
