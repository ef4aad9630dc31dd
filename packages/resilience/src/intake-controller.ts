import type { Clock } from "./clock.js";
import { Listeners } from "./listeners.js";
import { WindowedCounter } from "./windowed-counter.js";

/**
 * Intake control at the edge, for getting out of a metastable failure.
 *
 * After a spike, retries and timeouts can hold load above capacity long
 * after the trigger is gone; nothing inside the system breaks that loop.
 * The way out is to cut intake at the entrance to a level the system can
 * serve, and once responses come back in time, let traffic back in about
 * 10% at a time; opening all at once sends the full load into cold caches
 * and pools and starts the next round.
 *
 * The controller is fed every outcome (`record`) and asked per request
 * (`admit`). It moves between:
 * - normal: everything is admitted; when the window shows enough volume
 *   with a success rate below `minSuccessRate` (or mean latency above
 *   `maxMeanLatencyMs`), it cuts to `cutFraction`;
 * - cut / recovering: every `stepIntervalMs` without renewed trouble it
 *   raises the fraction by `stepFraction`, back to normal at 100%; renewed
 *   trouble halves the fraction (not below `minFraction`) and the rate
 *   below (not below what is still served) and restarts the interval;
 * - while cut or recovering, a fraction is also a rate: at every cut it
 *   notes the rate of requests still being served (over `rateWindowMs`;
 *   at a halving, not less than half the rate noted before), and admits more than its fraction when fewer arrive than that rate
 *   (which grows with each step up). A fraction alone is a share of
 *   whatever arrives: after a 5x spike is cut to the 20% still served, the
 *   return to normal load would be cut to 20% of it too, far below what
 *   the system serves, for the whole stepwise recovery;
 * - what the rate admits beyond the fraction is paced (a token bucket
 *   filled at that rate, holding at most `rateBurstMs` of it): the share
 *   it grants is computed from arrivals over the whole rate window, so
 *   without pacing a wave of retries arriving within a fraction of a
 *   second (users rejected together come back together) was admitted at
 *   several times the rate the chain serves, overflowed the queues behind
 *   the edge, and the refusals that followed halved intake again: on one
 *   core after the storm lab's spike, intake sat at its 5 % floor when the
 *   users left (docs/storm-lab.md, "metastable on a slow host");
 * - manual: an operator's fixed fraction; releasing it resumes gradual
 *   recovery from that fraction rather than jumping to 100%.
 *
 * Outcomes of requests that started before the latest change are ignored
 * (their start is `now - latencyMs`): a request admitted under the old
 * fraction says nothing about the new one, and counting the tail of the
 * overload right after a cut would halve the fraction again at once.
 *
 * All timing is lazy on the injected clock; there are no timers.
 */
export interface IntakeControllerOptions {
  clock: Clock;
  /** Admission draws from this; default Math.random. */
  random?: () => number;
  /** Health window in normal operation. Default 10_000 ms. */
  windowMs?: number;
  /** Outcomes needed in the window before health is judged at all. Default 20. */
  minVolume?: number;
  /** Unhealthy below this success rate. Default 0.5. */
  minSuccessRate?: number;
  /** Unhealthy when the mean latency in the window exceeds this; off when undefined. */
  maxMeanLatencyMs?: number;
  /** Fraction admitted right after a cut. Default 0.2. */
  cutFraction?: number;
  /** How long health must hold before the next step up. Default 3_000 ms. */
  stepIntervalMs?: number;
  /** Added to the fraction per step (of full traffic). Default 0.1. */
  stepFraction?: number;
  /** Halving never goes below this, so some traffic keeps probing. Default 0.05. */
  minFraction?: number;
  /** Window over which arrival and served rates are measured. Default 2_000 ms. */
  rateWindowMs?: number;
  /** The largest burst the rate admits beyond the fraction, as this long at that rate (at least one request). Default 250 ms. */
  rateBurstMs?: number;
  onTransition?: (event: IntakeTransition) => void;
}

export type IntakeState = "normal" | "cut" | "recovering" | "manual";

export type IntakeChangeReason = "success_rate" | "latency" | "step_up" | "manual" | "manual_released";

export interface IntakeTransition {
  from: IntakeState;
  to: IntakeState;
  /** The fraction admitted from now on. */
  admitFraction: number;
  reason: IntakeChangeReason;
  /** On the controller's clock. */
  at: number;
}

export interface IntakeSnapshot {
  state: IntakeState;
  admitFraction: number;
  /** When the state or fraction last changed, on the controller's clock. */
  changedAt: number;
  /** Outcomes counted since the last change (within the window). */
  window: { calls: number; failures: number };
  /** While cut or recovering: the rate (req/s) admitted whatever the fraction, when fewer arrive. */
  servedRatePerSec: number | undefined;
}

export class IntakeController {
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly minVolume: number;
  private readonly minSuccessRate: number;
  private readonly maxMeanLatencyMs: number | undefined;
  private readonly cutFraction: number;
  private readonly stepIntervalMs: number;
  private readonly stepFraction: number;
  private readonly minFraction: number;
  private readonly calls: WindowedCounter;
  private readonly failures: WindowedCounter;
  private readonly latencySum: WindowedCounter;
  /** Over the rate window, never reset: requests asking to be admitted, and successes. */
  private readonly arrivals: WindowedCounter;
  private readonly served: WindowedCounter;
  private readonly rateWindowSec: number;
  /** See the class comment; undefined in normal and manual operation. */
  private servedRate: number | undefined;
  /** The rate noted at the latest cut or halving, before any step up scaled it. */
  private rateAtCut: number | undefined;
  private readonly rateBurstMs: number;
  /** The rate's token bucket: admissions beyond the fraction it still allows, as of `tokensAt`. Empty at every cut and halving; a step up keeps it. */
  private tokens = 0;
  private tokensAt: number;
  private readonly listeners = new Listeners<IntakeTransition>();
  private state: IntakeState = "normal";
  private fraction = 1;
  private changedAt: number;
  /** Outcomes of requests that started before this are ignored; no limit until the first change. */
  private countFrom = Number.NEGATIVE_INFINITY;

  constructor(opts: IntakeControllerOptions) {
    this.clock = opts.clock;
    this.random = opts.random ?? Math.random;
    const windowMs = opts.windowMs ?? 10_000;
    this.minVolume = opts.minVolume ?? 20;
    this.minSuccessRate = opts.minSuccessRate ?? 0.5;
    this.maxMeanLatencyMs = opts.maxMeanLatencyMs;
    this.cutFraction = opts.cutFraction ?? 0.2;
    this.stepIntervalMs = opts.stepIntervalMs ?? 3_000;
    this.stepFraction = opts.stepFraction ?? 0.1;
    this.minFraction = opts.minFraction ?? 0.05;
    checkFraction("minSuccessRate", this.minSuccessRate);
    checkFraction("cutFraction", this.cutFraction);
    checkFraction("minFraction", this.minFraction);
    if (!(this.stepFraction > 0 && this.stepFraction <= 1)) throw new RangeError(`stepFraction must be in (0, 1], got ${this.stepFraction}`);
    if (!(this.stepIntervalMs > 0)) throw new RangeError(`stepIntervalMs must be positive, got ${this.stepIntervalMs}`);
    if (!(this.minVolume >= 1)) throw new RangeError(`minVolume must be >= 1, got ${this.minVolume}`);
    if (this.minFraction > this.cutFraction) throw new RangeError("minFraction must not exceed cutFraction");
    this.calls = new WindowedCounter(opts.clock, windowMs);
    this.failures = new WindowedCounter(opts.clock, windowMs);
    this.latencySum = new WindowedCounter(opts.clock, windowMs);
    const rateWindowMs = opts.rateWindowMs ?? 2_000;
    this.arrivals = new WindowedCounter(opts.clock, rateWindowMs);
    this.served = new WindowedCounter(opts.clock, rateWindowMs);
    this.rateWindowSec = rateWindowMs / 1000;
    this.rateBurstMs = opts.rateBurstMs ?? 250;
    if (!(this.rateBurstMs > 0)) throw new RangeError(`rateBurstMs must be positive, got ${this.rateBurstMs}`);
    this.changedAt = opts.clock.now();
    this.tokensAt = this.changedAt;
    if (opts.onTransition) this.listeners.add(opts.onTransition);
  }

  /** Subscribes to state and fraction changes (for logs and metrics); returns an unsubscribe function. */
  onTransition(listener: (event: IntakeTransition) => void): () => void {
    return this.listeners.add(listener);
  }

  /** Whether to admit one request. Draws from `random` only while the fraction is strictly between 0 and 1. */
  admit(): boolean {
    this.tick();
    this.arrivals.add(1);
    if (this.fraction >= 1) return true;
    const share = this.effectiveFraction();
    if (share <= this.fraction) return this.fraction > 0 && this.random() < this.fraction;
    // The rate lets in more than the fraction: a draw below the fraction is admitted as always,
    // one between the fraction and the share only while the rate's bucket holds a token.
    const r = this.random();
    return r < this.fraction || (r < share && this.takeToken());
  }

  /** Right after trouble nothing beyond the fraction goes in at once: the rate's tokens start from none. */
  private emptyBucket(): void {
    this.tokens = 0;
    this.tokensAt = this.clock.now();
  }

  /** Takes one of the rate's tokens (see the class comment) if the bucket holds one. */
  private takeToken(): boolean {
    const rate = this.servedRate ?? 0;
    const now = this.clock.now();
    const capacity = Math.max(1, (rate * this.rateBurstMs) / 1000);
    this.tokens = Math.min(capacity, this.tokens + ((now - this.tokensAt) * rate) / 1000);
    this.tokensAt = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** The fraction, raised when fewer requests arrive than the rate noted at the cut. */
  private effectiveFraction(): number {
    if (this.servedRate === undefined || this.fraction >= 1) return this.fraction;
    const arrivalRate = this.arrivals.sum() / this.rateWindowSec;
    return Math.max(this.fraction, Math.min(1, this.servedRate / arrivalRate));
  }

  /**
   * Records the outcome of one admitted request. `success` should be false
   * only for outcomes that show the system failing (timeouts, unavailable,
   * internal), not for the client's own errors.
   */
  record(success: boolean, latencyMs: number): void {
    this.tick();
    const now = this.clock.now();
    if (success) this.served.add(1);
    if (now - Math.max(0, latencyMs) < this.countFrom) return;
    this.calls.add(1);
    if (!success) this.failures.add(1);
    this.latencySum.add(Math.max(0, latencyMs));
    if (this.state === "manual") return;
    const verdict = this.unhealthy();
    if (verdict === undefined) return;
    if (this.state === "normal") {
      // Cut to a safe rate: the share that was still being served, which is
      // about what the system can take now (so a 2x overload is cut to
      // about half, not below capacity), and never less than cutFraction.
      const served = (this.calls.sum() - this.failures.sum()) / this.calls.sum();
      const fraction = verdict === "success_rate" ? Math.min(0.9, Math.max(this.cutFraction, served)) : this.cutFraction;
      const servedRate = this.served.sum() / this.rateWindowSec;
      this.change("cut", fraction, verdict);
      this.servedRate = servedRate > 0 ? servedRate : undefined;
      this.rateAtCut = this.servedRate;
      this.emptyBucket();
    } else {
      // The share halves, and so, at most, does the rate: what is served
      // now, but not less than half the rate noted before. Right after a
      // cut the chain is still jammed with work admitted before it, so
      // what it serves then (near zero during a spike) is not what it can
      // serve once that work drains; noting it held intake near zero long
      // after the spike (docs/storm-lab.md, "metastable on a slow host":
      // 0.50 -> 0.12 -> 0.06 -> 0.05 of arrivals while users' retries kept
      // them at 2-3x, some 16 s to climb back). Halved like the share, the
      // rate still falls geometrically when capacity really fell.
      // Half the rate noted at the last cut, not the one the steps since
      // raised it to: those steps were a guess the renewed trouble refuted.
      const servedRate = Math.max(this.served.sum() / this.rateWindowSec, (this.rateAtCut ?? 0) / 2);
      this.change("cut", Math.max(this.minFraction, this.fraction / 2), verdict);
      this.servedRate = servedRate > 0 ? servedRate : undefined;
      this.rateAtCut = this.servedRate;
      this.emptyBucket();
    }
  }

  /**
   * Fixes the admitted fraction (an operator's override), or with null
   * hands control back: from a fraction below 1 the controller recovers
   * gradually, step by step, as after a cut.
   */
  setManual(fraction: number | null): void {
    if (fraction === null) {
      if (this.state !== "manual") return;
      if (this.fraction >= 1) this.change("normal", 1, "manual_released");
      else this.change("recovering", this.fraction, "manual_released");
      return;
    }
    checkFraction("manual fraction", fraction);
    this.change("manual", fraction, "manual");
  }

  snapshot(): IntakeSnapshot {
    this.tick();
    return {
      state: this.state,
      admitFraction: this.fraction,
      changedAt: this.changedAt,
      window: { calls: this.calls.sum(), failures: this.failures.sum() },
      servedRatePerSec: this.servedRate,
    };
  }

  /** Takes at most one step up per call, and only once a whole interval has passed since the last change. */
  private tick(): void {
    if (this.state !== "cut" && this.state !== "recovering") return;
    if (this.clock.now() - this.changedAt < this.stepIntervalMs) return;
    const next = round(this.fraction + this.stepFraction);
    const servedRate = this.servedRate === undefined || this.fraction <= 0 ? undefined : (this.servedRate * next) / this.fraction;
    if (next >= 1) this.change("normal", 1, "step_up");
    else {
      this.change("recovering", next, "step_up");
      this.servedRate = servedRate;
    }
  }

  private unhealthy(): "success_rate" | "latency" | undefined {
    const calls = this.calls.sum();
    if (calls < this.minVolume) return undefined;
    const successRate = (calls - this.failures.sum()) / calls;
    if (successRate < this.minSuccessRate) return "success_rate";
    if (this.maxMeanLatencyMs !== undefined && this.latencySum.sum() / calls > this.maxMeanLatencyMs) return "latency";
    return undefined;
  }

  private change(to: IntakeState, fraction: number, reason: IntakeChangeReason): void {
    const from = this.state;
    const at = this.clock.now();
    this.state = to;
    this.fraction = round(fraction);
    // Set again by the callers that keep a rate (cut, halving, step up).
    this.servedRate = undefined;
    if (to === "normal" || to === "manual") this.rateAtCut = undefined;
    // Every change starts a new observation period (see the class comment).
    this.changedAt = at;
    this.countFrom = at;
    this.calls.reset();
    this.failures.reset();
    this.latencySum.reset();
    this.listeners.emit({ from, to, admitFraction: this.fraction, reason, at });
  }
}

function checkFraction(name: string, v: number): void {
  if (!(v >= 0 && v <= 1)) throw new RangeError(`${name} must be in [0, 1], got ${v}`);
}

/** Keeps repeated 0.1 steps from drifting to 0.30000000000000004 and missing 1. */
function round(v: number): number {
  return Math.round(v * 1e9) / 1e9;
}
