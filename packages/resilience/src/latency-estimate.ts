/**
 * A cheap estimate of how long the next call to one dependency will take,
 * used to refuse work (a retry, a call) that cannot finish before the
 * deadline.
 *
 * It keeps an exponentially weighted mean of observed durations and of their
 * absolute deviation (the estimator TCP uses for its retransmission timeout,
 * RFC 6298) and answers mean + k * deviation: a cautious, percentile-like
 * value without storing samples. Being cautious is deliberate: starting an
 * attempt that then runs out of time costs the dependency work that nobody
 * will read; skipping one that would have fitted costs one error.
 *
 * Feed it successful calls only: a failure's duration says how fast the
 * dependency fails, not how long work takes.
 */
export interface LatencyEstimateOptions {
  /** Weight of a new sample in the mean, in (0, 1]. Default 1/8 (RFC 6298's alpha). */
  alpha?: number;
  /** Weight of a new sample in the deviation, in (0, 1]. Default 1/4 (RFC 6298's beta). */
  beta?: number;
  /** How many deviations to add to the mean. Default 2. */
  deviations?: number;
  /** What `expectedMs()` answers before the first observation. Default 0 (no opinion). */
  initialMs?: number;
}

export class LatencyEstimate {
  private readonly alpha: number;
  private readonly beta: number;
  private readonly deviations: number;
  private readonly initialMs: number;
  private mean = 0;
  private deviation = 0;
  private samples = 0;

  constructor(opts: LatencyEstimateOptions = {}) {
    this.alpha = opts.alpha ?? 1 / 8;
    this.beta = opts.beta ?? 1 / 4;
    this.deviations = opts.deviations ?? 2;
    this.initialMs = opts.initialMs ?? 0;
    for (const [k, v] of [
      ["alpha", this.alpha],
      ["beta", this.beta],
    ] as const) {
      if (!(v > 0 && v <= 1)) throw new RangeError(`${k} must be in (0, 1], got ${v}`);
    }
    if (!(this.deviations >= 0)) throw new RangeError(`deviations must be >= 0, got ${this.deviations}`);
    if (!(this.initialMs >= 0)) throw new RangeError(`initialMs must be >= 0, got ${this.initialMs}`);
  }

  /** Records the duration of one successful call. Negative or non-finite values are ignored. */
  observe(ms: number): void {
    if (!(ms >= 0) || !Number.isFinite(ms)) return;
    if (this.samples === 0) {
      // One sample says nothing about spread; RFC 6298 starts the deviation
      // at half the sample, which errs on the cautious side.
      this.mean = ms;
      this.deviation = ms / 2;
    } else {
      // The deviation is updated with the previous mean, as in RFC 6298.
      this.deviation = (1 - this.beta) * this.deviation + this.beta * Math.abs(this.mean - ms);
      this.mean = (1 - this.alpha) * this.mean + this.alpha * ms;
    }
    this.samples++;
  }

  /** The cautious estimate: mean + deviations * deviation; `initialMs` until something was observed. */
  expectedMs(): number {
    if (this.samples === 0) return this.initialMs;
    return this.mean + this.deviations * this.deviation;
  }

  /** The smoothed mean alone; `initialMs` until something was observed. */
  meanMs(): number {
    return this.samples === 0 ? this.initialMs : this.mean;
  }

  /** Number of observations so far. */
  count(): number {
    return this.samples;
  }
}
