import type { Clock } from "@platform/resilience";

/**
 * A replica's latency as Finagle's and Linkerd's balancers estimate it: an
 * exponentially weighted moving average whose weight decays with time (tau),
 * that jumps straight to a slower sample (the peak). One slow answer makes
 * the replica look slow at once; it must then prove itself fast again over
 * about tau. Between samples the estimate decays toward zero (as Tower's
 * and Finagle's do), so a replica that looked slow once and was avoided
 * since is tried again after a while instead of being starved on an old
 * sample. A replica with no sample yet has no opinion (`undefined`): the
 * balancer then treats it as average, so a new replica is neither starved
 * nor flooded.
 */
export class PeakEwma {
  private value: number | undefined;
  private stamp = 0;

  constructor(
    private readonly clock: Clock,
    /**
     * How fast an old sample's weight fades. Finagle's and Linkerd's default
     * is 10 s; half that keeps equal replicas called one call at a time
     * (nothing outstanding to tell them apart) within a few points of an
     * even share, where 10 s let one replica's slow first call (its
     * connection being opened) cost it half its share (balancer.spec.ts).
     */
    private readonly decayMs = 5_000,
  ) {}

  observe(latencyMs: number): void {
    const now = this.clock.now();
    if (this.value === undefined || latencyMs > this.value) {
      this.value = latencyMs;
    } else {
      const weight = this.weightSince(now);
      this.value = this.value * weight + latencyMs * (1 - weight);
    }
    this.stamp = now;
  }

  /** The estimate in milliseconds, decayed since the last sample, or undefined before the first one. */
  get estimateMs(): number | undefined {
    return this.value === undefined ? undefined : this.value * this.weightSince(this.clock.now());
  }

  /** An old value's weight after this long. */
  private weightSince(now: number): number {
    return Math.exp(-Math.max(0, now - this.stamp) / this.decayMs);
  }

  /** Forgets every sample (a replica readmitted after an ejection starts over). */
  reset(): void {
    this.value = undefined;
  }
}
