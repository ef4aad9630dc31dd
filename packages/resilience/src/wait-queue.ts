import type { Clock } from "./clock.js";
import type { Scheduler } from "./scheduler.js";

/**
 * The one bounded, deadline-aware FIFO wait queue under the platform's
 * limiters: the bulkhead (slots for a dependency), admission control (slots
 * for a server's own work) and the database's connection slots each decide
 * when a slot is free; this decides who waits, for how long, and who gets
 * the slot (invariant 7, docs/architecture.md: expired work is never
 * started).
 *
 * - FIFO: `grantNext` hands the slot to the oldest entry still waiting.
 * - Expired-first dropping: an entry whose deadline has passed, or whose
 *   signal has aborted, is settled as gone, never granted, even when its
 *   timer or abort listener has not run yet (a slot freed in the same
 *   millisecond the deadline passes).
 * - Leaves on its own: at its deadline (a timer on the injected scheduler)
 *   or when its signal aborts, in O(1).
 * - Deadline-aware refusal: an entry that is already expired or aborted, or
 *   that finds the queue full, is never queued; it is settled at once.
 *
 * How an entry that leaves without a slot is answered is the user's (an
 * error to reject with, or an outcome to resolve with): `leave` says, given
 * why and how long it waited. The entry is out of the queue when `leave`
 * runs, so `length` already excludes it.
 */
export type LeaveReason = "deadline" | "aborted" | "full";

/** How a wait ends without a slot: resolved with a value or rejected with an error. */
export type Settlement<T> = { readonly value: T } | { readonly error: unknown };

export interface WaitOptions<T> {
  /** On the queue's clock: the entry leaves with "deadline" when this passes. Undefined: it waits until granted or aborted. */
  deadlineAt?: number;
  /** An abort makes the entry leave with "aborted". */
  signal?: AbortSignal;
  /** The settlement of an entry that leaves without a slot. */
  leave(reason: LeaveReason, waitedMs: number): Settlement<T>;
}

/** What a grant knows of the entry it serves. */
export interface WaitingEntry {
  readonly enqueuedAt: number;
  readonly deadlineAt: number | undefined;
}

/** Handle of a queued entry, to withdraw it (e.g. displaced by more important work). */
export interface WaitTicket {
  /** Settles the entry with `settlement` if it is still waiting; false when it was granted or left already. */
  withdraw(settlement: (waitedMs: number) => Settlement<unknown>): boolean;
}

export interface WaitQueueOptions {
  clock: Clock;
  scheduler: Scheduler;
  /** Entries allowed to wait at once (an integer >= 0); default unbounded. */
  maxLength?: number;
}

interface Entry<T> extends WaitingEntry {
  readonly signal: AbortSignal | undefined;
  readonly options: WaitOptions<T>;
  readonly resolve: (value: T) => void;
  readonly reject: (error: unknown) => void;
  prev: Entry<T> | undefined;
  next: Entry<T> | undefined;
  queued: boolean;
  cancelTimer: () => void;
  onAbort: (() => void) | undefined;
}

export class WaitQueue<T> {
  private readonly clock: Clock;
  private readonly scheduler: Scheduler;
  private readonly maxLength: number;
  private head: Entry<T> | undefined;
  private tail: Entry<T> | undefined;
  private count = 0;

  constructor(opts: WaitQueueOptions) {
    const max = opts.maxLength ?? Infinity;
    if (!(max === Infinity || (Number.isInteger(max) && max >= 0))) throw new RangeError(`maxLength must be an integer >= 0, got ${opts.maxLength}`);
    this.clock = opts.clock;
    this.scheduler = opts.scheduler;
    this.maxLength = max;
  }

  /** Entries waiting now. */
  get length(): number {
    return this.count;
  }

  /** No room for another entry. */
  isFull(): boolean {
    return this.count >= this.maxLength;
  }

  /**
   * Waits for `grantNext` to hand this entry a slot. Refused at once (settled
   * by `leave`, waited 0 ms) when the signal has aborted, the deadline has
   * passed, or the queue is full, in that order.
   */
  enqueue(opts: WaitOptions<T>): { promise: Promise<T>; ticket: WaitTicket } {
    const now = this.clock.now();
    let entry!: Entry<T>;
    const promise = new Promise<T>((resolve, reject) => {
      entry = {
        enqueuedAt: now,
        deadlineAt: opts.deadlineAt,
        signal: opts.signal,
        options: opts,
        resolve,
        reject,
        prev: undefined,
        next: undefined,
        queued: false,
        cancelTimer: noop,
        onAbort: undefined,
      };
    });
    const ticket: WaitTicket = {
      withdraw: (settlement) => {
        if (!this.unlink(entry)) return false;
        settle(entry, settlement(this.clock.now() - entry.enqueuedAt) as Settlement<T>);
        return true;
      },
    };
    const refusal: LeaveReason | undefined = opts.signal?.aborted
      ? "aborted"
      : opts.deadlineAt !== undefined && opts.deadlineAt <= now
        ? "deadline"
        : this.isFull()
          ? "full"
          : undefined;
    if (refusal !== undefined) {
      settle(entry, opts.leave(refusal, 0));
      return { promise, ticket };
    }
    if (opts.deadlineAt !== undefined) {
      entry.cancelTimer = this.scheduler.setTimeout(() => this.leave(entry, "deadline"), opts.deadlineAt - now);
    }
    if (opts.signal !== undefined) {
      const onAbort = () => this.leave(entry, "aborted");
      entry.onAbort = onAbort;
      opts.signal.addEventListener("abort", onAbort, { once: true });
    }
    this.append(entry);
    return { promise, ticket };
  }

  /**
   * Hands a slot to the oldest entry still waiting, resolving it with
   * `grant(waitedMs, entry)`. Entries at the front that have expired or been
   * aborted are settled as gone on the way. False when nobody is left to
   * take the slot.
   */
  grantNext(grant: (waitedMs: number, entry: WaitingEntry) => T): boolean {
    for (;;) {
      const entry = this.head;
      if (entry === undefined) return false;
      this.unlink(entry);
      const now = this.clock.now();
      const waitedMs = now - entry.enqueuedAt;
      if (entry.signal?.aborted) {
        settle(entry, entry.options.leave("aborted", waitedMs));
      } else if (entry.deadlineAt !== undefined && entry.deadlineAt <= now) {
        settle(entry, entry.options.leave("deadline", waitedMs));
      } else {
        entry.resolve(grant(waitedMs, entry));
        return true;
      }
    }
  }

  /**
   * Walks the waiting entries oldest first and settles each one for which
   * `decide(entry, position)` returns a settlement (it leaves the queue);
   * the others keep their places. `position` counts from 1 among the
   * entries kept so far (an entry's place once those ahead that left are
   * gone). Returns how many left.
   */
  sweep(decide: (entry: WaitingEntry, position: number) => Settlement<T> | undefined): number {
    let kept = 0;
    let left = 0;
    for (let entry = this.head; entry !== undefined; ) {
      const next = entry.next;
      const settlement = decide(entry, kept + 1);
      if (settlement === undefined) kept++;
      else if (this.unlink(entry)) {
        left++;
        settle(entry, settlement);
      }
      entry = next;
    }
    return left;
  }

  /** Settles the newest waiting entry with `settlement` (displaced by more important work); false when the queue is empty. */
  evictNewest(settlement: (waitedMs: number) => Settlement<T>): boolean {
    const entry = this.tail;
    if (entry === undefined) return false;
    this.unlink(entry);
    settle(entry, settlement(this.clock.now() - entry.enqueuedAt));
    return true;
  }

  private leave(entry: Entry<T>, reason: LeaveReason): void {
    if (!this.unlink(entry)) return;
    settle(entry, entry.options.leave(reason, this.clock.now() - entry.enqueuedAt));
  }

  private append(entry: Entry<T>): void {
    entry.queued = true;
    entry.prev = this.tail;
    if (this.tail) this.tail.next = entry;
    else this.head = entry;
    this.tail = entry;
    this.count++;
  }

  /** Takes `entry` out of the queue and stops its timer and abort listener; false when it was not queued. */
  private unlink(entry: Entry<T>): boolean {
    if (!entry.queued) return false;
    entry.queued = false;
    if (entry.prev) entry.prev.next = entry.next;
    else this.head = entry.next;
    if (entry.next) entry.next.prev = entry.prev;
    else this.tail = entry.prev;
    entry.prev = entry.next = undefined;
    this.count--;
    entry.cancelTimer();
    if (entry.onAbort) entry.signal?.removeEventListener("abort", entry.onAbort);
    return true;
  }
}

function settle<T>(entry: Entry<T>, s: Settlement<T>): void {
  if ("error" in s) entry.reject(s.error);
  else entry.resolve(s.value);
}

const noop = () => {};
