/**
 * Marks errors that this process produced on its own (a full bulkhead, an
 * open breaker, a wait that outlived its deadline) as opposed to errors that
 * came back from the dependency.
 *
 * The distinction matters in two places: a circuit breaker must not count
 * its own or a bulkhead's rejections as evidence that the dependency is
 * sick (that would let local saturation open the breaker), and the retry
 * decision must not retry a rejection that the next attempt would meet
 * again. Both read the mark with `localRejection(err)`.
 */

export type LocalRejectionKind =
  /** All slots busy and the wait queue full. */
  | "bulkhead_full"
  /** The wait to expect for a slot is longer than the time left before the deadline. */
  | "bulkhead_expected_wait"
  /** The deadline passed before a slot became free. */
  | "bulkhead_deadline"
  /** The caller went away while waiting for a slot. */
  | "bulkhead_canceled"
  /** The breaker is open (or half-open with its trial call in flight). */
  | "circuit_open"
  /** Not started: the remaining deadline was below the minimum budget. */
  | "budget_too_small";

export interface LocalRejection {
  readonly kind: LocalRejectionKind;
  /** The bulkhead or breaker name, i.e. the dependency. */
  readonly dependency: string;
  /** When the rejecting component expects to accept calls again, if it knows. */
  readonly retryAfterMs?: number;
}

// Symbol.for, not Symbol(): two copies of this package in one process (a
// bundling accident) must still recognise each other's marks.
const mark = Symbol.for("@platform/resilience/local-rejection");

/** Attaches `info` to `err` (non-enumerable, so it never reaches logs or the wire by accident) and returns `err`. */
export function markLocalRejection<E extends object>(err: E, info: LocalRejection): E {
  Object.defineProperty(err, mark, { value: info, enumerable: false, configurable: true });
  return err;
}

/** The mark attached by `markLocalRejection`, or undefined for errors from elsewhere. */
export function localRejection(err: unknown): LocalRejection | undefined {
  if (typeof err !== "object" || err === null) return undefined;
  const info = (err as { [mark]?: unknown })[mark];
  return isLocalRejection(info) ? info : undefined;
}

function isLocalRejection(v: unknown): v is LocalRejection {
  return typeof v === "object" && v !== null && "kind" in v && "dependency" in v;
}
