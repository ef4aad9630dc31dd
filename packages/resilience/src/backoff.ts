/**
 * Exponential backoff with "full jitter" (AWS Architecture Blog, 2015): the
 * wait before a retry is uniform in [0, cap), where the cap grows
 * exponentially up to `maxMs`. Spreading retries over the whole interval is
 * what keeps a fleet of clients that failed together from retrying together.
 */

export interface BackoffPolicy {
  /** Cap of the first retry's delay. */
  readonly initialMs: number;
  /** Growth of the cap per retry (2 doubles it). */
  readonly multiplier: number;
  /** The cap never grows beyond this. */
  readonly maxMs: number;
}

/** The upper bound of the delay before retry number `retryNumber` (1 for the first retry). */
export function backoffCapMs(retryNumber: number, policy: BackoffPolicy): number {
  if (!Number.isInteger(retryNumber) || retryNumber < 1) {
    throw new RangeError(`retryNumber counts retries from 1, got ${retryNumber}`);
  }
  // multiplier ** n may overflow to Infinity for absurd n; min() absorbs it.
  return Math.min(policy.maxMs, policy.initialMs * policy.multiplier ** (retryNumber - 1));
}

/**
 * The delay before retry number `retryNumber` (1 for the first retry):
 * `random() * min(maxMs, initialMs * multiplier^(retryNumber-1))`.
 * `random` must return values in [0, 1) like `Math.random`.
 */
export function backoffDelayMs(retryNumber: number, policy: BackoffPolicy, random: () => number): number {
  return random() * backoffCapMs(retryNumber, policy);
}
