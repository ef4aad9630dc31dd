import { type Clock, type Scheduler, systemClock, systemScheduler, WaitQueue } from "@platform/resilience";

/** A wait for a slot that ended without one: it ran out of time, or its signal aborted. */
export class SlotWaitError extends Error {
  override readonly name = "SlotWaitError";
  constructor(readonly reason: "timeout" | "aborted") {
    super(`gave up waiting for a connection slot (${reason})`);
  }
}

/**
 * A FIFO counting semaphore in front of the pg pool, one slot per connection.
 *
 * pg-pool queues `connect()` calls itself, but a queued call cannot be
 * withdrawn: a caller that gives up (deadline, cancel) stays in its queue and
 * later receives a connection it no longer wants, and every live caller
 * behind it waits for those ghosts. Waiting here instead (in the platform's
 * one deadline-aware wait queue) makes giving up O(1) and exact, so
 * `waiting` counts only callers that still want a connection, and the pool
 * itself never has to queue.
 */
export class ConnectionSlots {
  private used = 0;
  private readonly queue: WaitQueue<void>;
  private readonly clock: Clock;

  constructor(
    readonly size: number,
    time: { clock: Clock; scheduler: Scheduler } = { clock: systemClock, scheduler: systemScheduler },
  ) {
    this.clock = time.clock;
    this.queue = new WaitQueue(time);
  }

  /** Callers currently waiting for a slot. */
  get waiting(): number {
    return this.queue.length;
  }

  /**
   * Resolves with a slot, or rejects with a `SlotWaitError` after
   * `timeoutMs` or when `signal` aborts, whichever comes first. A free slot
   * is granted even with a zero timeout.
   */
  acquire(signal: AbortSignal, timeoutMs: number): Promise<void> {
    if (this.used < this.size && this.queue.length === 0) {
      this.used++;
      return Promise.resolve();
    }
    return this.queue.enqueue({
      deadlineAt: this.clock.now() + Math.max(0, timeoutMs),
      signal,
      leave: (reason) => ({ error: new SlotWaitError(reason === "aborted" ? "aborted" : "timeout") }),
    }).promise;
  }

  /** Returns a slot; the longest waiter still waiting gets it directly. */
  release(): void {
    if (!this.queue.grantNext(() => undefined)) this.used--;
  }
}
