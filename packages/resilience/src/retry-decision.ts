import { Code, type ConnectError } from "@connectrpc/connect";
import { backoffDelayMs } from "./backoff.js";
import { localRejection } from "./local-rejection.js";
import type { RetryBudget } from "./retry-budget.js";
import { neverRetryable } from "./failure-class.js";
import type { RetryPolicy } from "./retry-policy.js";

export interface RetryDecisionInput {
  /** The failed attempt's error. */
  error: ConnectError;
  /** Attempts made so far (1 after the first failure). */
  attempt: number;
  policy: RetryPolicy;
  /** Time left of the overall (user request's) deadline. */
  remainingMs: number;
  /** How long an attempt is expected to take, e.g. `LatencyEstimate.expectedMs()`. */
  expectedAttemptMs: number;
  /**
   * The least time an attempt needs to reach the bottom of its call chain:
   * every hop below keeps its reserve back and refuses a call with less
   * than the minimum budget, so an attempt started with less is refused
   * further down and ends as DEADLINE_EXCEEDED, hiding the failure that was
   * retried. Default 0 (no floor).
   */
  minAttemptMs?: number;
  /** The server's hint from `readPushback`: a delay, "never", or undefined for no hint. */
  pushbackMs?: number | "never";
  /** Whether repeating the call is harmless (a read, or a write carrying an idempotency key). */
  idempotent: boolean;
  /** The call provably never reached the handler (e.g. REFUSED_STREAM, GOAWAY before processing). */
  neverProcessed: boolean;
  /** Only `tryWithdraw` is used; consulted last. */
  budget: Pick<RetryBudget, "tryWithdraw">;
  random: () => number;
}

export type RetryDecision =
  | {
      retry: true;
      /** Wait this long before the next attempt (whole ms). */
      delayMs: number;
      /** "never_processed" when the retry is allowed only because the call never ran. */
      reason: "retryable_code" | "never_processed";
    }
  | {
      retry: false;
      reason: "not_retryable_code" | "not_idempotent" | "max_attempts" | "deadline" | "budget_exhausted" | "pushback_never";
    };

/**
 * Decides whether the gateway retries a failed attempt, and after how long.
 *
 * The checks run cheapest and most definite first, and the budget strictly
 * last: a token is only withdrawn for a retry that will actually happen,
 * otherwise refusals for other reasons would drain the budget.
 *
 * 1. `neverRetryable(code)` (the caller's request, CANCELED, DEADLINE_EXCEEDED;
 *    see failure-class.ts) -> "not_retryable_code", always.
 * 2. A local rejection (our own open breaker, full bulkhead) ->
 *    "not_retryable_code": the next attempt would meet the same state.
 * 3. Pushback "never" -> "pushback_never" (gRFC A6: a malformed or negative
 *    hint means the server asks not to be retried).
 * 4. The code must be in `policy.retryableCodes`, unless the call was never
 *    processed (then any code outside rule 1 may be retried, as for gRPC's
 *    transparent retries: nothing ran, so nothing can be repeated).
 *    RESOURCE_EXHAUSTED additionally needs an explicit pushback delay: we
 *    read "retry it when the server's pushback allows it" strictly, because
 *    without a hint it may be a quota that will not recover within the
 *    deadline, and retrying an overloaded server is exactly the load that
 *    keeps it overloaded.
 * 5. A non-idempotent call is retried only when it was never processed.
 * 6. `attempt >= policy.maxAttempts` -> "max_attempts".
 * 7. delay = max(full-jitter backoff, pushback); if delay + the attempt's
 *    time >= remaining time -> "deadline": never sleep past the deadline and
 *    never start an attempt that cannot finish. The attempt's time is the
 *    expected one, but never less than `minAttemptMs`: a dependency that
 *    fails fast makes the estimate small (it learns from successes only, and
 *    before the first one it has no opinion), and a retry squeezed into the
 *    last milliseconds would be refused below instead of tried.
 * 8. `budget.tryWithdraw()` false -> "budget_exhausted".
 */
export function decideRetry(input: RetryDecisionInput): RetryDecision {
  const { error, attempt, policy, pushbackMs } = input;
  const code = error.code;
  if (!Number.isInteger(attempt) || attempt < 1) throw new RangeError(`attempt counts attempts made so far, from 1; got ${attempt}`);

  if (neverRetryable(code)) return { retry: false, reason: "not_retryable_code" };
  if (localRejection(error) !== undefined) return { retry: false, reason: "not_retryable_code" };
  if (pushbackMs === "never") return { retry: false, reason: "pushback_never" };

  const codeListed = policy.retryableCodes.includes(code);
  if (!codeListed && !input.neverProcessed) return { retry: false, reason: "not_retryable_code" };
  if (code === Code.ResourceExhausted && pushbackMs === undefined) return { retry: false, reason: "not_retryable_code" };

  if (!input.idempotent && !input.neverProcessed) return { retry: false, reason: "not_idempotent" };
  if (attempt >= policy.maxAttempts) return { retry: false, reason: "max_attempts" };

  const backoff = backoffDelayMs(attempt, policy.backoff, input.random);
  // Round up: a pushback is a minimum, and the deadline check must see the
  // delay that will really be slept.
  const delayMs = Math.ceil(Math.max(backoff, pushbackMs ?? 0));
  const attemptMs = Math.max(0, input.expectedAttemptMs, input.minAttemptMs ?? 0);
  if (!(delayMs + attemptMs < input.remainingMs)) return { retry: false, reason: "deadline" };

  if (!input.budget.tryWithdraw()) return { retry: false, reason: "budget_exhausted" };
  return { retry: true, delayMs, reason: codeListed ? "retryable_code" : "never_processed" };
}
