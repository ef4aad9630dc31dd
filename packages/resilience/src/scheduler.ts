import { FakeClock } from "./clock.js";

/**
 * One-shot timers, injectable like `Clock`.
 *
 * `Clock` only reads time; the few units that must act when a moment passes
 * (a queued bulkhead entry whose deadline expires) also need to be woken.
 * Production uses `systemScheduler`; tests use `FakeScheduler`, which is a
 * `FakeClock` whose `advance()` also fires the timers that came due, in
 * order, so waiting is asserted without sleeping.
 */
export interface Scheduler {
  /** Calls `callback` once after `delayMs`; the returned function cancels it (idempotent). */
  setTimeout(callback: () => void, delayMs: number): () => void;
}

export const systemScheduler: Scheduler = {
  setTimeout(callback, delayMs) {
    const timer = setTimeout(callback, Math.max(0, delayMs));
    // A pending wait must not keep a process alive that is otherwise done
    // (tests, graceful shutdown): whoever waits holds its own reference.
    timer.unref?.();
    return () => clearTimeout(timer);
  },
};

interface PendingTimer {
  readonly dueAt: number;
  readonly seq: number;
  readonly callback: () => void;
}

/** A `FakeClock` that also schedules timers and fires them as time is advanced. */
export class FakeScheduler extends FakeClock implements Scheduler {
  private timers: PendingTimer[] = [];
  private seq = 0;

  setTimeout(callback: () => void, delayMs: number): () => void {
    const timer: PendingTimer = { dueAt: this.now() + Math.max(0, delayMs), seq: this.seq++, callback };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  /** Moves time forward by `ms`, firing every timer that comes due (including ones scheduled by fired callbacks) at its own moment. */
  override advance(ms: number): void {
    if (ms < 0) throw new RangeError("a clock does not go back");
    const target = this.now() + ms;
    for (;;) {
      const next = this.nextDue(target);
      if (next === undefined) break;
      this.timers = this.timers.filter((t) => t !== next);
      super.advance(next.dueAt - this.now());
      next.callback();
    }
    super.advance(target - this.now());
  }

  /** Number of timers not yet fired or cancelled. */
  pendingTimers(): number {
    return this.timers.length;
  }

  private nextDue(limit: number): PendingTimer | undefined {
    let best: PendingTimer | undefined;
    for (const t of this.timers) {
      if (t.dueAt > limit) continue;
      if (best === undefined || t.dueAt < best.dueAt || (t.dueAt === best.dueAt && t.seq < best.seq)) best = t;
    }
    return best;
  }
}
