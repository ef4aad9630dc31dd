import type { CircuitBreaker } from "./circuit-breaker.js";
import { type Scheduler, systemScheduler } from "./scheduler.js";

export interface BreakerProbeOptions {
  /**
   * Asks the dependency whether it serves again (its health check, which
   * exercises what it needs of its own: its database). True when it does;
   * false or a rejection when it does not.
   */
  check(): Promise<boolean>;
  /** The mean wait between checks is 3/4 of this, jittered over [1/2, 1) of it. Default 200 ms. */
  intervalMs?: number;
  scheduler?: Scheduler;
  random?: () => number;
}

/**
 * Closes a dependency's open breakers as soon as the dependency serves
 * again. While any of the breakers it watches is open, it checks the
 * dependency every `intervalMs` or so (one check at a time, for all of
 * them); a check that succeeds closes each open one (`probeSucceeded`).
 *
 * So an open breaker costs a dead dependency a health check every ~150 ms
 * from each caller, and no user request; and a dependency that comes back
 * gets its traffic again within one interval, instead of at the reset
 * timer's next trial, whose backoff grows with the outage.
 */
export class BreakerProbe {
  private readonly breakers = new Set<CircuitBreaker>();
  private readonly intervalMs: number;
  private readonly scheduler: Scheduler;
  private readonly random: () => number;
  private running = false;
  private stopped = false;
  private cancel: (() => void) | undefined;

  constructor(private readonly opts: BreakerProbeOptions) {
    this.intervalMs = opts.intervalMs ?? 200;
    if (!(this.intervalMs > 0)) throw new RangeError(`intervalMs must be positive, got ${this.intervalMs}`);
    this.scheduler = opts.scheduler ?? systemScheduler;
    this.random = opts.random ?? Math.random;
  }

  /** Watches `breaker`: when it opens, probing starts (if it is not running already). */
  watch(breaker: CircuitBreaker): void {
    this.breakers.add(breaker);
    breaker.onEvent((e) => {
      if (e.type === "transition" && e.to === "open") this.start();
    });
    if (breaker.state() === "open") this.start();
  }

  /** Stops probing for good. */
  stop(): void {
    this.stopped = true;
    this.cancel?.();
    this.cancel = undefined;
  }

  private start(): void {
    if (this.running || this.stopped) return;
    this.running = true;
    this.schedule();
  }

  private schedule(): void {
    const delayMs = this.intervalMs * (0.5 + this.random() / 2);
    this.cancel = this.scheduler.setTimeout(() => {
      this.cancel = undefined;
      void this.probe();
    }, delayMs);
  }

  private async probe(): Promise<void> {
    if (this.stopped) return;
    if (!this.anyOpen()) {
      this.running = false;
      return;
    }
    const serving = await this.opts.check().catch(() => false);
    if (serving) for (const b of this.breakers) if (b.state() === "open") b.probeSucceeded();
    if (this.stopped) return;
    if (this.anyOpen()) this.schedule();
    else this.running = false;
  }

  private anyOpen(): boolean {
    for (const b of this.breakers) if (b.state() === "open") return true;
    return false;
  }
}
