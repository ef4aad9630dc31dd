import type { Clock } from "@platform/resilience";

/**
 * A replica's latency as Finagle's and Linkerd's balancers estimate it: an
 * exponentially weighted moving average whose weight decays with time (tau),
 * that jumps straight to a slower sample (the peak). One slow answer makes
 * the replica look slow at once; it must then prove itself fast again over
 * about tau. A replica with no sample yet has no opinion (`undefined`): the
 * balancer then treats it as average, so a new replica is neither starved
 * nor flooded.
 */
export class PeakEwma {
  private value: number | undefined;
  private stamp = 0;

  constructor(
    private readonly clock: Clock,
    /** How fast an old sample's weight fades; Finagle's and Linkerd's default is 10 s. */
    private readonly decayMs = 10_000,
  ) {}

  observe(latencyMs: number): void {
    const now = this.clock.now();
    if (this.value === undefined || latencyMs > this.value) {
      this.value = latencyMs;
    } else {
      const weight = Math.exp(-Math.max(0, now - this.stamp) / this.decayMs);
      this.value = this.value * weight + latencyMs * (1 - weight);
    }
    this.stamp = now;
  }

  /** The estimate in milliseconds, or undefined before the first sample. */
  get estimateMs(): number | undefined {
    return this.value;
  }

  /** Forgets every sample (a replica readmitted after an ejection starts over). */
  reset(): void {
    this.value = undefined;
  }
}
