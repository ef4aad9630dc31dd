import type { Clock } from "./clock.js";

/**
 * A concurrency limit for one dependency (or one method class of it) that
 * adapts to the latency the dependency shows, so that a slow dependency gets
 * fewer of our slots instead of all of them (invariant 6, docs/architecture.md). The bulkhead
 * takes its concurrency from it (`Bulkhead`'s `limiter` option).
 *
 * Hand-written: no Node library offers an adaptive limiter for Connect
 * clients (the known ones, Netflix's concurrency-limits and Envoy's adaptive
 * concurrency filter, are Java and C++). It is small on purpose; every rule
 * below has a spec with a fake clock (adaptive-limit.spec.ts).
 *
 * The algorithm is Netflix's Gradient2, chosen over the alternatives
 * because it needs no absolute latency threshold and no drop signal:
 * - AIMD shrinks on drops (timeouts, rejections) only. Our deadlines differ
 *   per call and are set by the user, so "a drop" comes late (a 5 s
 *   deadline is 5 s of a full bulkhead) and a fixed latency threshold per
 *   dependency is exactly the hand tuning the defaults must avoid.
 * - Vegas compares against the minimum latency ever seen. One lucky fast
 *   sample (a cached answer, an empty result) sets a baseline that normal
 *   traffic never meets again, and the limit stays low until a reset.
 * - Gradient2 compares the recent (short-window) average latency with a
 *   long-window exponential average, tolerates `tolerance` x of inflation
 *   (jitter, GC, a busier moment) before it reacts, and lets the long
 *   window follow a lasting change, so it works for fast and slow methods
 *   alike with the same settings.
 *
 * Each short window (at least `windowMs` and `minWindowSamples` samples):
 *   gradient = clamp(tolerance x baseline / recent, 0.5, 1)
 *   - gradient < 1 (latency rose beyond tolerance): the limit shrinks toward
 *     limit x gradient, by `decreaseSmoothing` of the way;
 *   - gradient = 1 and the window used at least half the limit: the limit
 *     grows toward limit + sqrt(limit), by `smoothing` of the way (probing
 *     for more; a window that used less than half says nothing about more);
 *   - always within [minLimit, maxLimit].
 * Two deliberate differences from Netflix's code: it adds the probing
 * headroom only while latency is within tolerance (Gradient2 adds it always,
 * which makes a dependency that answers nothing at all settle at about
 * twice the headroom instead of the minimum), and a call that ended in a
 * timeout counts with its elapsed time (Gradient2 ignores a dropped call's
 * latency, so a dependency that only times out never looks slow).
 *
 * The baseline ("no-load" latency) is the average latency of successful
 * calls over the first windows, then an exponential average over about
 * `baselineSamples` successful calls, one step per call (Gradient2 steps
 * its long average once per sample unless it is wrapped in a windowed
 * limit): a busy healthy dependency (hundreds of calls a second) moves it
 * within seconds, a stalled one (a few calls a second at the floor) over
 * minutes. Counted in windows instead (600 windows of 500 ms, five
 * minutes, until 2026-12), a process that had served one client at a time
 * learned a baseline of a millisecond or two, and a saturating but healthy
 * load afterwards (every latency up with CPU contention) held every hop at
 * its floor for minutes: 30 % less throughput than the same load on a fresh
 * process (docs/isolation.md, "The baseline learns from calls, not from
 * time"). Timeouts never feed it (so a stall cannot teach
 * it that stalling is normal), and a window of nothing but timeouts before
 * any baseline exists shrinks the limit as the steepest gradient does. When
 * latency recovers after a long slowdown the baseline has crept up; while
 * it is more than twice the recent latency it decays by 5 % per window so
 * that it comes back down within a minute or so, as in Gradient2.
 */
export interface AdaptiveLimitOptions {
  /** Lowest limit (>= 1): what a slow dependency still gets. */
  minLimit: number;
  /** Highest limit (>= minLimit): what a healthy one may get. */
  maxLimit: number;
  /** Where it starts; default minLimit, so a new process earns its slots. */
  initialLimit?: number;
  clock: Clock;
  /** Shortest window, ms. Default 500. */
  windowMs?: number;
  /** Fewest samples in a window; a quiet window stays open until it has them. Default 5. */
  minWindowSamples?: number;
  /** Successful calls the baseline averages over (after its first windows). Default 600 (Gradient2's). */
  baselineSamples?: number;
  /**
   * Latency inflation tolerated before the limit shrinks. Default 2
   * (Gradient2's is 1.5): measured at the caller, latency includes the
   * caller's own event-loop delay under CPU load, which fewer slots to the
   * dependency would not cure.
   */
  tolerance?: number;
  /**
   * Share of a growth step taken per window, (0, 1]. Default 0.5 (Gradient2's
   * is 0.2): after a stall every hop's limit sits at its floor, and at 0.2
   * the storm lab's slow-dependency run took 7.9 s to serve normal load
   * again once the lock was gone (floor 3 to 12 is ~17 windows at 0.2, ~7
   * at 0.5). Growth needs latency within tolerance and demand, so it does
   * not overshoot a dependency that is still slow.
   */
  smoothing?: number;
  /** Share of a shrink step taken per window, (0, 1]. Default 0.5. */
  decreaseSmoothing?: number;
}

export interface LimitSample {
  /** How long the call held its slot. */
  durationMs: number;
  /** Calls holding a slot when this one finished, this one included. */
  inFlight: number;
  /** The call ran out of time (deadline): its duration is a lower bound of the latency. */
  dropped?: boolean;
}

export interface AdaptiveLimitSnapshot {
  limit: number;
  /** The last closed window's average latency (0 before the first window). */
  recentMs: number;
  /** The long-window baseline (0 before the first window). */
  baselineMs: number;
}

export class AdaptiveLimit {
  private readonly minLimit: number;
  private readonly maxLimit: number;
  private readonly clock: Clock;
  private readonly windowMs: number;
  private readonly minWindowSamples: number;
  private readonly baselineSamples: number;
  private readonly tolerance: number;
  private readonly smoothing: number;
  private readonly decreaseSmoothing: number;
  /** Fractional: moves smoothly; `limit()` answers its integer part. */
  private estimate: number;
  private window: Window;
  private recent = 0;
  private baseline = 0;
  /** Windows that have fed the baseline so far. */
  private fedWindows = 0;

  constructor(opts: AdaptiveLimitOptions) {
    const int = (k: string, v: number, min: number) => {
      if (!Number.isInteger(v) || v < min) throw new RangeError(`${k} must be an integer >= ${min}, got ${v}`);
    };
    int("minLimit", opts.minLimit, 1);
    int("maxLimit", opts.maxLimit, opts.minLimit);
    const initial = opts.initialLimit ?? opts.minLimit;
    if (!(initial >= opts.minLimit && initial <= opts.maxLimit)) {
      throw new RangeError(`initialLimit must be within [${opts.minLimit}, ${opts.maxLimit}], got ${initial}`);
    }
    this.minLimit = opts.minLimit;
    this.maxLimit = opts.maxLimit;
    this.clock = opts.clock;
    this.windowMs = opts.windowMs ?? 500;
    this.minWindowSamples = opts.minWindowSamples ?? 5;
    this.baselineSamples = opts.baselineSamples ?? 600;
    this.tolerance = opts.tolerance ?? 2;
    this.smoothing = opts.smoothing ?? 0.5;
    this.decreaseSmoothing = opts.decreaseSmoothing ?? 0.5;
    if (!(this.windowMs > 0)) throw new RangeError(`windowMs must be > 0, got ${this.windowMs}`);
    int("minWindowSamples", this.minWindowSamples, 1);
    int("baselineSamples", this.baselineSamples, 1);
    if (!(this.tolerance >= 1)) throw new RangeError(`tolerance must be >= 1, got ${this.tolerance}`);
    for (const [k, v] of [
      ["smoothing", this.smoothing],
      ["decreaseSmoothing", this.decreaseSmoothing],
    ] as const) {
      if (!(v > 0 && v <= 1)) throw new RangeError(`${k} must be in (0, 1], got ${v}`);
    }
    this.estimate = initial;
    this.window = { start: this.clock.now(), sum: 0, count: 0, okSum: 0, okCount: 0, maxInFlight: 0 };
  }

  /** Calls allowed at once now: an integer within [minLimit, maxLimit]. */
  limit(): number {
    return Math.floor(this.estimate);
  }

  snapshot(): AdaptiveLimitSnapshot {
    return { limit: this.limit(), recentMs: this.recent, baselineMs: this.baseline };
  }

  /**
   * Records one finished call. Feed successes and calls that ran out of time
   * (`dropped`); not errors that came back quickly (a refusal from further
   * down says nothing about how long work takes there), nor our own refusals.
   */
  onSample(sample: LimitSample): void {
    const ms = sample.durationMs;
    if (!(ms >= 0) || !Number.isFinite(ms)) return;
    const w = this.window;
    w.sum += ms;
    w.count++;
    if (!sample.dropped) {
      w.okSum += ms;
      w.okCount++;
    }
    w.maxInFlight = Math.max(w.maxInFlight, sample.inFlight);
    const now = this.clock.now();
    if (now - w.start < this.windowMs || w.count < this.minWindowSamples) return;
    this.closeWindow(w);
    this.window = { start: now, sum: 0, count: 0, okSum: 0, okCount: 0, maxInFlight: 0 };
  }

  private closeWindow(w: Window): void {
    const recent = w.sum / w.count;
    this.recent = recent;
    // The baseline learns from calls that finished: a window of timeouts
    // says the dependency is slow, not how long its work normally takes.
    if (w.okCount > 0) {
      const ok = w.okSum / w.okCount;
      this.fedWindows++;
      this.baseline +=
        this.fedWindows <= 10
          ? (ok - this.baseline) / this.fedWindows // warm-up: a plain average of the first windows
          : (ok - this.baseline) * (1 - (1 - 2 / (this.baselineSamples + 1)) ** w.okCount); // one EMA step per call
    }
    // Latency is back to normal after a long slowdown: let the baseline
    // follow it down faster than its long window would.
    if (recent > 0 && this.baseline / recent > 2) this.baseline *= 0.95;

    // No baseline yet (nothing has ever finished): timeouts alone read as the
    // steepest gradient, anything else as no evidence either way.
    const gradient =
      this.fedWindows === 0
        ? w.okCount < w.count
          ? 0.5
          : 1
        : Math.max(0.5, Math.min(1, (this.tolerance * this.baseline) / Math.max(recent, Number.MIN_VALUE)));
    let next = this.estimate;
    if (gradient < 1) {
      next = this.estimate + (this.estimate * gradient - this.estimate) * this.decreaseSmoothing;
    } else if (w.maxInFlight >= this.estimate / 2) {
      next = this.estimate + Math.sqrt(this.estimate) * this.smoothing;
    }
    this.estimate = Math.max(this.minLimit, Math.min(this.maxLimit, next));
  }
}

interface Window {
  start: number;
  sum: number;
  count: number;
  okSum: number;
  okCount: number;
  maxInFlight: number;
}
