import type { Clock } from "./clock.js";
import { WindowedCounter } from "./windowed-counter.js";

/**
 * A retry budget in the manner of Finagle's `RetryBudget` /
 * `TokenRetryBudget`: every original request deposits a fraction of a
 * token, every retry withdraws a whole one, so retries stay at about
 * `percentCanRetry` of recent traffic however bad things get. At a 100%
 * error rate that caps the load on the dependency at ~(1 + percent) x,
 * where per-call attempt counts would give 3x (and 3^n across hops).
 *
 * Deposits (and withdrawals) expire after `ttlMs`, kept in a sliced window
 * so that a quiet night cannot bank a thundering herd. A reserve of
 * `minRetriesPerSec * ttl` retries is always available on top, so a client
 * that has just started, or sees little traffic, can still retry a blip.
 */
export interface RetryBudgetOptions {
  /** Retries allowed as a fraction of original requests, e.g. 0.1 for 10%. 0 disables the earned part. */
  percentCanRetry: number;
  /** Floor of retries per second regardless of traffic. 0 disables the reserve. */
  minRetriesPerSec: number;
  /** How long a deposit stays valid. */
  ttlMs: number;
  clock: Clock;
}

export interface RetryBudgetStats {
  deposits: number;
  /** Retries granted. */
  withdrawals: number;
  /** Retries refused for lack of budget; an early sign that a dependency is degrading. */
  exhausted: number;
}

// Finagle scales tokens by 1000 so that fractional deposits stay integers;
// we do the same and avoid floating-point drift in the windowed sums.
const scale = 1_000;
const slices = 10;

export class RetryBudget {
  private readonly depositAmount: number;
  private readonly withdrawalAmount: number;
  private readonly reserve: number;
  private readonly window: WindowedCounter;
  private readonly counters: RetryBudgetStats = { deposits: 0, withdrawals: 0, exhausted: 0 };

  constructor(opts: RetryBudgetOptions) {
    const { percentCanRetry, minRetriesPerSec, ttlMs } = opts;
    if (!(percentCanRetry >= 0) || percentCanRetry > 1_000) {
      throw new RangeError(`percentCanRetry must be within [0, 1000], got ${percentCanRetry}`);
    }
    if (!(minRetriesPerSec >= 0) || !Number.isFinite(minRetriesPerSec)) {
      throw new RangeError(`minRetriesPerSec must be a non-negative number, got ${minRetriesPerSec}`);
    }
    if (!(ttlMs > 0) || !Number.isFinite(ttlMs)) throw new RangeError(`ttlMs must be positive, got ${ttlMs}`);
    if (percentCanRetry === 0) {
      // Requests earn nothing; every retry comes out of the reserve.
      this.depositAmount = 0;
      this.withdrawalAmount = 1;
    } else {
      this.depositAmount = scale;
      this.withdrawalAmount = Math.floor(scale / percentCanRetry);
    }
    this.reserve = Math.floor(minRetriesPerSec * (ttlMs / 1_000) * this.withdrawalAmount);
    this.window = new WindowedCounter(opts.clock, ttlMs, slices);
  }

  /** Call once per original request (not per retry). */
  deposit(): void {
    this.counters.deposits++;
    if (this.depositAmount > 0) this.window.add(this.depositAmount);
  }

  /**
   * Call once per intended retry, after every other check has said yes:
   * a withdrawal that is not followed by a retry wastes budget.
   * Returns false (and takes nothing) when the budget is exhausted.
   */
  tryWithdraw(): boolean {
    // Withdrawals go into the same window as negative deposits, so they
    // expire too and the balance recovers ttl after an outage.
    if (this.window.sum() + this.reserve >= this.withdrawalAmount) {
      this.window.add(-this.withdrawalAmount);
      this.counters.withdrawals++;
      return true;
    }
    this.counters.exhausted++;
    return false;
  }

  /** Whole retries available right now. */
  balance(): number {
    return Math.max(0, Math.floor((this.window.sum() + this.reserve) / this.withdrawalAmount));
  }

  /** Cumulative counters since construction, for metrics. */
  stats(): RetryBudgetStats {
    return { ...this.counters };
  }
}
