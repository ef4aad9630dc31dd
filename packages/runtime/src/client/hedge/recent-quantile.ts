/**
 * A quantile of the last `size` samples (a ring), e.g. the recent p95 of a
 * method's latency. Exact over the window; sorting a few hundred numbers is
 * done at most once per `refreshEvery` samples.
 */
export class RecentQuantile {
  private readonly samples: number[] = [];
  private next = 0;
  private sinceSort = Infinity;
  private cached: number | undefined;

  constructor(
    private readonly q: number,
    private readonly size = 200,
    /** Fewer samples than this: no answer (too little to say what slow is). */
    private readonly minSamples = 20,
    private readonly refreshEvery = 10,
  ) {
    if (!(q > 0 && q < 1)) throw new RangeError(`quantile must be within (0, 1), got ${q}`);
  }

  observe(value: number): void {
    if (this.samples.length < this.size) this.samples.push(value);
    else this.samples[this.next] = value;
    this.next = (this.next + 1) % this.size;
    this.sinceSort++;
  }

  /** The quantile, or undefined with fewer than `minSamples` samples. */
  value(): number | undefined {
    if (this.samples.length < this.minSamples) return undefined;
    if (this.sinceSort >= this.refreshEvery) {
      const sorted = [...this.samples].sort((a, b) => a - b);
      this.cached = sorted[Math.min(sorted.length - 1, Math.ceil(this.q * sorted.length) - 1)];
      this.sinceSort = 0;
    }
    return this.cached;
  }
}
