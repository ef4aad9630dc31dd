import { Code } from "@connectrpc/connect";
import type { BackoffPolicy } from "./backoff.js";
import { neverRetryable } from "./failure-class.js";

/**
 * A retry policy is data, so that it can be logged, compared and set per
 * route without code. Only the gateway uses `defaultRetryPolicy`; every
 * inner hop passes `noRetryPolicy` explicitly (invariant 4 in docs/architecture.md: exactly one
 * layer retries), so a forgotten option never silently reintroduces 3^n.
 */
export interface RetryPolicy {
  /** Attempts in total, including the first. 1 means never retry. */
  readonly maxAttempts: number;
  /**
   * Codes that may be retried. Codes in `neverRetryableCodes` are refused
   * even if listed here, and RESOURCE_EXHAUSTED additionally needs a
   * pushback hint from the server (see `decideRetry`).
   */
  readonly retryableCodes: readonly Code[];
  readonly backoff: BackoffPolicy;
}

/**
 * Codes never retried (see `neverRetryable` in failure-class.ts): the
 * caller's own request, the caller's wish to stop (CANCELED), or a deadline
 * already spent (DEADLINE_EXCEEDED). Derived from the one taxonomy, kept as
 * a set for callers that list or iterate them.
 */
export const neverRetryableCodes: ReadonlySet<Code> = new Set(Object.values(Code).filter((v): v is Code => typeof v === "number" && neverRetryable(v)));

export const defaultRetryPolicy: RetryPolicy = Object.freeze({
  maxAttempts: 3,
  retryableCodes: Object.freeze([Code.Unavailable, Code.ResourceExhausted]),
  backoff: Object.freeze({ initialMs: 50, multiplier: 2, maxMs: 1_000 }),
});

export const noRetryPolicy: RetryPolicy = Object.freeze({
  maxAttempts: 1,
  retryableCodes: Object.freeze([] as Code[]),
  backoff: defaultRetryPolicy.backoff,
});
