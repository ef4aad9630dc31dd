import { Code } from "@connectrpc/connect";

/**
 * The platform's one answer to "whose problem is this outcome?". Retry,
 * the circuit breaker, the mapping of a dependency's error, the edge's
 * intake controller and the request log all ask it, so they cannot drift
 * apart.
 *
 * - "ok": the call succeeded.
 * - "caller": a working server answered about this request or this caller
 *   (bad argument, no such thing, not allowed, not implemented). Repeating
 *   the call gets the same answer; it says nothing about anyone's health.
 * - "conflict": ABORTED, a concurrency conflict (a transaction the database
 *   rolled back, an idempotency key that expired while in use). Worth
 *   repeating at a higher level, but not a sign of a sick dependency.
 * - "cancelled": the caller went away. Says nothing about the dependency,
 *   and repeating the call would act against the caller's own wish.
 * - "deadline": no answer before the deadline. Counts against the
 *   dependency (it was too slow), but is never retried: the time is gone.
 * - "overload": RESOURCE_EXHAUSTED, work shed by admission control. Counts
 *   against the dependency and, at the edge, as a sign the system is over
 *   capacity; retried only when the server's pushback says when.
 * - "dependency": the server is broken or unreachable (UNAVAILABLE,
 *   INTERNAL, UNKNOWN, DATA_LOSS). Counts against it; a server fault in logs.
 */
export type FailureClass = "ok" | "caller" | "conflict" | "cancelled" | "deadline" | "overload" | "dependency";

/** Every Connect code, and only those, once: the compiler checks the table is complete. */
const classOf: Readonly<Record<Code, Exclude<FailureClass, "ok">>> = {
  [Code.Canceled]: "cancelled",
  [Code.Unknown]: "dependency",
  [Code.InvalidArgument]: "caller",
  [Code.DeadlineExceeded]: "deadline",
  [Code.NotFound]: "caller",
  [Code.AlreadyExists]: "caller",
  [Code.PermissionDenied]: "caller",
  [Code.ResourceExhausted]: "overload",
  [Code.FailedPrecondition]: "caller",
  [Code.Aborted]: "conflict",
  [Code.OutOfRange]: "caller",
  [Code.Unimplemented]: "caller",
  [Code.Internal]: "dependency",
  [Code.Unavailable]: "dependency",
  [Code.DataLoss]: "dependency",
  [Code.Unauthenticated]: "caller",
};

/** The class of an outcome: "ok", or a Connect code. Throws on anything else (a number outside the enum is a bug, not a class). */
export function classify(outcome: Code | "ok"): FailureClass {
  if (outcome === "ok") return "ok";
  const c = classOf[outcome];
  if (c === undefined) throw new RangeError(`not a Connect code: ${String(outcome)}`);
  return c;
}

/**
 * Never retried, whatever a policy lists and even when the call provably
 * never ran: the caller's own request ("caller"), the caller's wish to stop
 * ("cancelled"), or a deadline already spent ("deadline").
 */
export function neverRetryable(code: Code): boolean {
  const c = classify(code);
  return c === "caller" || c === "cancelled" || c === "deadline";
}

/**
 * Counts as a failure of the dependency in its circuit breaker: it was
 * broken ("dependency"), too slow ("deadline") or shedding ("overload").
 * Local rejections (our own bulkhead or breaker) are judged by the breaker
 * before the code is looked at.
 */
export function countsAgainstDependency(code: Code): boolean {
  const c = classify(code);
  return c === "dependency" || c === "deadline" || c === "overload";
}

/**
 * Says the system is over capacity, for the edge's intake controller. Only
 * shedding does: a slow or dead dependency shows up as "deadline" or
 * "dependency" on the paths that need it, and its breaker and bulkhead deal
 * with that; cutting all intake for it would starve the paths that do not.
 */
export function signalsOverload(outcome: Code | "ok"): boolean {
  return classify(outcome) === "overload";
}

/** A fault of the server side, worth a warning in the request log (the caller's errors, deadlines and shedding are not). */
export function isServerFault(code: Code): boolean {
  return classify(code) === "dependency";
}

/**
 * Describes the caller's request, so a hop passes it up unchanged: the user
 * reads the same precise message the answering service wrote.
 */
export function describesCallersRequest(code: Code): boolean {
  return classify(code) === "caller";
}
