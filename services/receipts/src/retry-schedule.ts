/**
 * When to try a receipt again after a failed delivery: full-jitter
 * exponential backoff (a random delay between 0 and min(cap, base * 2^(n-1))
 * after the n-th failure) within a budget of attempts per receipt. The
 * jitter matters most after an outage: every receipt that failed during it
 * would otherwise come back in the same instant, hitting the dependency as
 * it recovers with everything at once.
 */
export interface RetrySchedule {
  /** Delay ceiling after the first failure. */
  baseMs: number;
  /** No delay above this, however many failures. */
  capMs: number;
  /** Attempts per receipt, the first included; after the last failure it is given up ("failed"). */
  maxAttempts: number;
}

export type RetryDecision = { kind: "retry"; delayMs: number } | { kind: "give_up" };

/**
 * The decision after attempt number `attempts` (1 for the first) failed.
 * `random` is in [0, 1) (Math.random in production; fixed in tests).
 */
export function afterFailure(schedule: RetrySchedule, attempts: number, random: number): RetryDecision {
  if (attempts >= schedule.maxAttempts) return { kind: "give_up" };
  const ceiling = Math.min(schedule.capMs, schedule.baseMs * 2 ** Math.min(attempts - 1, 30));
  return { kind: "retry", delayMs: Math.floor(random * ceiling) };
}
