import type { Clock } from "./clock.js";

/**
 * A sum over a sliding time window, kept in `slices` buckets (like Finagle's
 * WindowedAdder): adding is O(1), reading is O(slices), and values older
 * than the window fall out without any timer.
 *
 * The window is "between windowMs*(slices-1)/slices and windowMs": a value
 * leaves when the slice it was added in is `slices` slices old. That
 * granularity is the price of not storing every event.
 */
export class WindowedCounter {
  private readonly sliceMs: number;
  private readonly values: number[];
  /** The slice number (floor(now / sliceMs)) each bucket currently holds. */
  private readonly epochs: number[];

  constructor(
    private readonly clock: Clock,
    windowMs: number,
    private readonly slices = 10,
  ) {
    if (!(windowMs > 0) || !Number.isFinite(windowMs)) throw new RangeError(`windowMs must be a positive number, got ${windowMs}`);
    if (!Number.isInteger(slices) || slices < 1) throw new RangeError(`slices must be a positive integer, got ${slices}`);
    this.sliceMs = windowMs / slices;
    this.values = new Array<number>(slices).fill(0);
    this.epochs = new Array<number>(slices).fill(Number.NEGATIVE_INFINITY);
  }

  add(n: number): void {
    const epoch = this.epoch();
    const i = this.index(epoch);
    if (this.epochs[i] !== epoch) {
      this.epochs[i] = epoch;
      this.values[i] = 0;
    }
    this.values[i] = (this.values[i] ?? 0) + n;
  }

  sum(): number {
    const epoch = this.epoch();
    let total = 0;
    for (let i = 0; i < this.slices; i++) {
      const e = this.epochs[i] ?? Number.NEGATIVE_INFINITY;
      if (epoch - e < this.slices) total += this.values[i] ?? 0;
    }
    return total;
  }

  /** Forgets everything, e.g. when a state machine starts a new observation period. */
  reset(): void {
    this.values.fill(0);
    this.epochs.fill(Number.NEGATIVE_INFINITY);
  }

  private epoch(): number {
    return Math.floor(this.clock.now() / this.sliceMs);
  }

  private index(epoch: number): number {
    return ((epoch % this.slices) + this.slices) % this.slices;
  }
}
