/**
 * The platform's refusals as errors: a code and message for people, the
 * pushback headers for the platform's own clients (resilience's
 * pushback.ts), and the same meaning as google.rpc details (ErrorInfo with
 * a stable reason, RetryInfo with the same delay) for any gRPC client
 * (@platform/proto/error-details, docs/errors.md).
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { type Refusal, type RefusalReason, withRefusal } from "@platform/proto/error-details";
import { type LocalRejectionKind, pushbackHeaders, type ShedReason } from "@platform/resilience";

export type { Refusal, RefusalReason };

/**
 * A refusal: `code` and `message`, the details of `refusal` and, when it
 * gives a delay, the pushback headers that say the same (at least 1 ms:
 * "0" would read as "come back at once").
 */
export function refusalError(message: string, code: Code, refusal: Refusal): ConnectError {
  const retryAfterMs = refusal.retryAfterMs === undefined ? undefined : Math.max(1, Math.ceil(refusal.retryAfterMs));
  const err = new ConnectError(message, code, retryAfterMs === undefined ? undefined : pushbackHeaders(retryAfterMs));
  return withRefusal(err, retryAfterMs === undefined ? refusal : { ...refusal, retryAfterMs });
}

/** The reason of a rejection a bulkhead, breaker or budget gate made for a dependency; undefined for a caller that left. */
export function localRejectionReason(kind: LocalRejectionKind): RefusalReason | undefined {
  switch (kind) {
    case "bulkhead_full":
      return "BULKHEAD_FULL";
    case "bulkhead_expected_wait":
      return "BULKHEAD_WAIT_TOO_LONG";
    case "bulkhead_deadline":
      return "DEADLINE_EXPIRED";
    case "circuit_open":
      return "BREAKER_OPEN";
    case "budget_too_small":
      return "DEADLINE_TOO_SHORT";
    case "bulkhead_canceled":
      return undefined;
  }
}

/** The reason of a request admission control refused; undefined for a caller that left. */
export function shedRefusalReason(reason: ShedReason): RefusalReason | undefined {
  switch (reason) {
    case "queue_full":
    case "queue_timeout":
    case "evicted":
      return "SHED_OVERLOADED";
    case "expired":
      return "DEADLINE_EXPIRED";
    case "cancelled":
      return undefined;
  }
}

/**
 * A tenant over its quota (`description`, e.g. "2 requests per second
 * (burst 4)"): RESOURCE_EXHAUSTED naming it, with QuotaFailure naming the
 * tenant and its quota and RetryInfo with when the bucket has a token again.
 */
export function quotaExceededError(tenant: string, retryAfterMs: number, description: string): ConnectError {
  return refusalError(`quota exceeded for tenant "${tenant}": ${description}; retry after ${retryAfterMs} ms`, Code.ResourceExhausted, {
    reason: "QUOTA_EXCEEDED",
    retryAfterMs,
    metadata: { tenant },
    quotaViolations: [{ subject: `tenant:${tenant}`, description }],
  });
}
