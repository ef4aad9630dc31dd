/** A wait for a slot that ended without one: it ran out of time, or its signal aborted. */
export class SlotWaitError extends Error {
  override readonly name = "SlotWaitError";
  constructor(readonly reason: "timeout" | "aborted") {
    super(`gave up waiting for a connection slot (${reason})`);
  }
}

interface Waiter {
  grant(): void;
}

/**
 * A FIFO counting semaphore in front of the pg pool, one slot per connection.
 *
 * pg-pool queues `connect()` calls itself, but a queued call cannot be
 * withdrawn: a caller that gives up (deadline, cancel) stays in its queue and
 * later receives a connection it no longer wants, and every live caller
 * behind it waits for those ghosts. Waiting here instead makes giving up
 * O(1) and exact, so `waiting` counts only callers that still want a
 * connection, and the pool itself never has to queue.
 */
export class ConnectionSlots {
  private used = 0;
  private readonly queue: Waiter[] = [];

  constructor(readonly size: number) {}

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
    if (signal.aborted) return Promise.reject(new SlotWaitError("aborted"));
    return new Promise<void>((resolve, reject) => {
      const leave = (why: SlotWaitError["reason"]) => {
        const i = this.queue.indexOf(waiter);
        if (i >= 0) this.queue.splice(i, 1);
        cleanup();
        reject(new SlotWaitError(why));
      };
      const onAbort = () => leave("aborted");
      const timer = setTimeout(() => leave("timeout"), Math.max(0, timeoutMs));
      const cleanup = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
      };
      const waiter: Waiter = {
        grant: () => {
          cleanup();
          resolve();
        },
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.queue.push(waiter);
    });
  }

  /** Returns a slot; the longest waiter gets it directly. */
  release(): void {
    const next = this.queue.shift();
    if (next) next.grant();
    else this.used--;
  }
}
