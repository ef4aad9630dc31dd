/**
 * How many retries a retry budget's reserve can grant over a stretch of
 * wall-clock time, for tests that bound the attempts a run made.
 *
 * The reserve (`minRetriesPerSec * ttl`) is always there on top of what
 * requests earn. Withdrawals age out of the budget's sliced window like
 * deposits: the window has ten slices, so a withdrawal can leave it as soon
 * as 9/10 of the ttl after it was made. A run longer than that gets the
 * reserve once more per such stretch. How long a run takes depends on the
 * machine (100 requests took 10.7 s on a loaded CI machine, past a 10 s
 * window): callers pass the elapsed time they measured, never an assumed one.
 */
export interface RetryBudgetShape {
  minRetriesPerSec: number;
  ttlMs: number;
}

/** The shortest time after which a withdrawal may have left the budget's window (its ten slices). */
export function retryWithdrawalLifetimeMs(budget: Pick<RetryBudgetShape, "ttlMs">): number {
  return budget.ttlMs * 0.9;
}

/** Retries the reserve can grant over a run that took `elapsedMs`: once per withdrawal lifetime the run spans. */
export function retryReserveOver(budget: RetryBudgetShape, elapsedMs: number): { windows: number; retries: number } {
  if (!(elapsedMs >= 0)) throw new RangeError(`elapsedMs must be a measured, non-negative duration, got ${elapsedMs}`);
  const windows = Math.max(1, Math.ceil(elapsedMs / retryWithdrawalLifetimeMs(budget)));
  return { windows, retries: budget.minRetriesPerSec * (budget.ttlMs / 1000) * windows };
}
