/**
 * Time source for every deadline, backoff, budget and breaker decision.
 *
 * Production code uses the monotonic `systemClock`; tests inject a fake so
 * that time-dependent logic is asserted without sleeping and without
 * wall-clock thresholds.
 */
export interface Clock {
  /** Milliseconds on a monotonic scale. Only differences are meaningful. */
  now(): number;
}

export const systemClock: Clock = {
  now: () => performance.now(),
};

/** A clock that only moves when told to. */
export class FakeClock implements Clock {
  constructor(private current = 0) {}
  now(): number {
    return this.current;
  }
  advance(ms: number): void {
    if (ms < 0) throw new RangeError("a clock does not go back");
    this.current += ms;
  }
}
