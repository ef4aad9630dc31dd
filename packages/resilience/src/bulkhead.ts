import { Code, ConnectError } from "@connectrpc/connect";
import type { Clock } from "./clock.js";
import { LatencyEstimate } from "./latency-estimate.js";
import { Listeners } from "./listeners.js";
import { type LocalRejectionKind, markLocalRejection } from "./local-rejection.js";
import { pushbackHeaders } from "./pushback.js";
import { type Scheduler, systemScheduler } from "./scheduler.js";
import { WaitQueue } from "./wait-queue.js";

/**
 * Bounded concurrency and a bounded FIFO wait queue for one dependency
 * (invariant 6, docs/architecture.md): a slow database behind one dependency can fill that dependency's bulkhead, but
 * not the slots of call paths that do not need it.
 *
 * Bounded means the queue has a limit (size it as tolerable wait x
 * throughput) and that a full bulkhead says so at once with
 * UNAVAILABLE, instead of letting callers wait for work that will
 * finish after they have given up. Waiting work whose deadline passes, or
 * whose caller goes away, leaves the queue, and when a slot frees entries
 * that have already expired are dropped rather than started (invariant 7, docs/architecture.md).
 *
 * Connect transports queue silently beyond HTTP/2's max concurrent streams,
 * so this limiter, not the transport, is what bounds a dependency.
 *
 * The number of slots is fixed (`maxConcurrent`) or comes from a `limiter`
 * (an `AdaptiveLimit`), which the bulkhead feeds with each call's hold time
 * and outcome and asks again at every decision: when the limit shrinks,
 * calls already running keep their slots and new ones wait or are refused.
 *
 * A call is refused before it queues when the wait it can expect, plus one
 * service time to run, exceeds its deadline (reason "expected_wait"):
 * expected wait = service time x queue position / limit, where service time is the larger of the mean hold
 * time of recent calls and how long the running calls have gone without
 * one of them finishing well (the age of the oldest call still running, or
 * the time since the last call finished well, whichever is shorter): a
 * dependency that has stopped answering has no recent hold times, but its
 * running calls get older; one that still finishes calls is served at its
 * hold times, however old its oldest running call (a backlog draining after
 * a restart, a single stuck call). And once the running calls are overdue (a
 * stall), the wait lasts at least until their deadlines pass, which is the
 * only sure bound left (see `expectedWaitMs`). Such a refusal, and a full
 * bulkhead's, carries a pushback hint (`grpc-retry-pushback-ms`,
 * `retry-after`, and `retryAfterMs` on the local-rejection mark): the
 * expected wait plus one service time, i.e. when a call arriving now could
 * be done. The edge's retry honours it, so it does not retry a call into a
 * wait its deadline cannot cover.
 *
 * Overdue running calls mean one of two things, and the bulkhead asks
 * which (`classifyStall`, the dependency's own answer):
 * - a stall (locked tables, a frozen server): the running calls will hold
 *   their slots until their deadlines. Every queued call whose expected
 *   wait no longer fits its deadline is refused at once, with pushback,
 *   instead of waiting out its deadline (and holding the slots of every hop
 *   above); new arrivals likewise. A watch timer looks while calls queue,
 *   since a stall has no events of its own.
 * - a restart (the dependency waits, within each call's deadline, for its
 *   database to accept connections again): every running call will finish
 *   at once when it is back. Calls queue and arrive as in normal service,
 *   the queue may hold `restartQueueFactor` x `maxQueue` (a restart's
 *   arrivals wait out its seconds; waiting costs a queue entry, nothing of
 *   the dependency), and those long holds teach the adaptive limit nothing.
 *   The calls that waited out the restart are aged from the last sign that
 *   they move (its confirmation, or one of them finishing), not from their
 *   start, and the larger queue holds until they are done: draining the
 *   backlog after a restart is service, not a stall. (Overdue also needs
 *   that no call has finished well for as long: see `overdue`.)
 * A stall is confirmed by two answers in a row (see `stallKind`). Without
 * a classifier, overdue calls are a stall at once.
 */

/** What the bulkhead needs of an adaptive limit (`AdaptiveLimit` is one). */
export interface ConcurrencyLimiter {
  /** Calls allowed at once now (an integer >= 1). */
  limit(): number;
  onSample(sample: { durationMs: number; inFlight: number; dropped?: boolean }): void;
}

export interface BulkheadOptions {
  /** The dependency; prefixes every error message and labels every event. */
  name: string;
  /** Calls allowed to run at once (>= 1): a fixed limit. Required unless `limiter` is given. */
  maxConcurrent?: number;
  /** Where the limit comes from instead (e.g. an `AdaptiveLimit`); fed with every finished call. */
  limiter?: ConcurrencyLimiter;
  /** Calls allowed to wait for a slot (>= 0; 0 rejects as soon as all slots are busy). */
  maxQueue: number;
  clock: Clock;
  /** Wakes queued entries at their deadline. Defaults to real timers; pass a `FakeScheduler` (which is also the clock) in tests. */
  scheduler?: Scheduler;
  /**
   * Asked when the running calls are overdue: is the dependency waiting
   * out a restart of its own dependency ("restart"), or stalled ("stall")?
   * A rejection counts as "stall". The answer holds for `classifiedForMs`.
   */
  classifyStall?: () => Promise<StallKind>;
  onEvent?: (event: BulkheadEvent) => void;
}

/** Why the running calls are overdue (see the class comment). */
export type StallKind = "stall" | "restart";

export interface AcquireOptions {
  /**
   * On the bulkhead's clock: the last moment at which starting is still
   * useful. Pass the request's deadline minus whatever the work needs after
   * acquiring (its reserve or expected duration), so that nothing starts
   * that cannot finish (invariant 2, docs/architecture.md).
   */
  deadlineAt?: number;
  /** The caller's signal (e.g. the call scope's); an abort removes the entry from the queue. */
  signal?: AbortSignal;
}

/**
 * Releases a slot. Idempotent: calling it again does nothing. The outcome
 * feeds the limiter: "ok" (default) and "dropped" (ran out of time) are
 * latency samples; "ignored" (e.g. an error that came back at once) is not;
 * "restart" (the call waited out a restart of the dependency's own
 * dependency, as its answer said) is neither a latency sample nor a hold
 * time, since it says nothing about how fast the dependency serves.
 */
export type Release = (outcome?: ReleaseOutcome) => void;

export type ReleaseOutcome = "ok" | "dropped" | "ignored" | "restart";

export type BulkheadRejectReason = "full" | "expected_wait" | "deadline" | "canceled";

export type BulkheadEvent =
  | { type: "acquired"; bulkhead: string /** 0 when a slot was free at once. */; waitedMs: number }
  | { type: "queued"; bulkhead: string /** Queue length including this entry. */; queued: number }
  | { type: "rejected"; bulkhead: string; reason: BulkheadRejectReason; waitedMs: number }
  | { type: "released"; bulkhead: string; heldMs: number }
  /** The running calls are overdue and `kind` says why: a restart, each time the dependency says so, or a stall, each time queued calls were refused for it (`shed`). */
  | { type: "stalled"; bulkhead: string; kind: StallKind; shed: number };

export interface BulkheadStats {
  name: string;
  /** The limit now (fixed, or the limiter's current one). */
  maxConcurrent: number;
  maxQueue: number;
  /** Service time used for expected waits: max(mean hold time, min(oldest running call's age, time since a call last finished well)); 0 without history. */
  serviceMs: number;
  inUse: number;
  queued: number;
  /** Cumulative slots granted. */
  acquired: number;
  /** Cumulative rejections of every reason. */
  rejected: number;
  rejectedByReason: Record<BulkheadRejectReason, number>;
}

export class Bulkhead {
  readonly name: string;
  private readonly limiter: ConcurrencyLimiter | undefined;
  private readonly fixedLimit: number;
  private readonly maxQueue: number;
  private readonly clock: Clock;
  private readonly listeners = new Listeners<BulkheadEvent>();
  /** Calls waiting for a slot: FIFO, leaving at their deadline or on abort (the shared primitive). */
  private readonly queue: WaitQueue<Release>;
  private inUse = 0;
  /** When each running call got its slot, and whether it waited out a restart of the dependency (aged from `heldMovedAt` then). */
  private readonly running = new Set<RunningCall>();
  /** The last sign that the calls held through a restart still move: the dependency saying it waits one out, or one of them finishing. */
  private heldMovedAt = Number.NEGATIVE_INFINITY;
  /** Running calls held through a restart (`RunningCall.heldThroughRestart`). */
  private heldThroughRestart = 0;
  /** When a call last finished well (released "ok" or "restart"): a stalled dependency serves none. */
  private servedAt = Number.NEGATIVE_INFINITY;
  /** Hold times of finished calls, whatever their outcome: how fast slots turn over. */
  private readonly holdTime = new LatencyEstimate({ alpha: 1 / 4 });
  private acquiredCount = 0;
  private readonly scheduler: Scheduler;
  private readonly classifyStall: (() => Promise<StallKind>) | undefined;
  /**
   * The last classification of overdue calls and until when it holds. A
   * first "stall" is only suspected, and asked again soon: the callers of
   * a chain ask before the hops below them have learnt of a restart, so a
   * stall is confirmed by two answers in a row. Pending or suspected counts
   * as a restart meanwhile (arrivals queue, nothing is shed).
   */
  private stallKind: { kind: StallKind | "suspected"; until: number } | undefined;
  private classifying = false;
  /** Cancels the watch timer (armed while calls queue). */
  private cancelWatch: (() => void) | undefined;
  private readonly rejectedByReason: Record<BulkheadRejectReason, number> = { full: 0, expected_wait: 0, deadline: 0, canceled: 0 };

  constructor(opts: BulkheadOptions) {
    if (opts.limiter === undefined && (!Number.isInteger(opts.maxConcurrent) || (opts.maxConcurrent ?? 0) < 1)) {
      throw new RangeError(`${opts.name}: maxConcurrent must be an integer >= 1, got ${opts.maxConcurrent}`);
    }
    if (!Number.isInteger(opts.maxQueue) || opts.maxQueue < 0) {
      throw new RangeError(`${opts.name}: maxQueue must be an integer >= 0, got ${opts.maxQueue}`);
    }
    this.name = opts.name;
    this.limiter = opts.limiter;
    this.fixedLimit = opts.maxConcurrent ?? 1;
    this.maxQueue = opts.maxQueue;
    this.clock = opts.clock;
    this.scheduler = opts.scheduler ?? systemScheduler;
    this.classifyStall = opts.classifyStall;
    this.queue = new WaitQueue({ clock: this.clock, scheduler: this.scheduler });
    if (opts.onEvent) this.listeners.add(opts.onEvent);
  }

  /** Subscribes to events (for metrics); returns an unsubscribe function. */
  onEvent(listener: (event: BulkheadEvent) => void): () => void {
    return this.listeners.add(listener);
  }

  /** The limit now: fixed, or the limiter's (never below 1). */
  limit(): number {
    return this.limiter ? Math.max(1, Math.floor(this.limiter.limit())) : this.fixedLimit;
  }

  /**
   * Waits for a slot. Rejects at once with UNAVAILABLE when all slots
   * are busy and the queue is full, or when the expected wait for a slot
   * plus the service time is longer than the time left before `deadlineAt`
   * (both with a pushback hint), with DEADLINE_EXCEEDED when `deadlineAt`
   * has passed (before or while queued), with CANCELED when `signal` aborts
   * (DEADLINE_EXCEEDED if its reason is "deadline", as a call scope's is).
   * Every rejection carries a local-rejection mark, so breakers do not count
   * it against the dependency.
   */
  acquire(opts: AcquireOptions = {}): Promise<Release> {
    const { deadlineAt, signal } = opts;
    const now = this.clock.now();
    if (signal?.aborted) return Promise.reject(this.rejectAborted(signal, "before a slot was free", 0));
    if (deadlineAt !== undefined && deadlineAt <= now) {
      return Promise.reject(this.rejection("deadline", Code.DeadlineExceeded, "deadline passed before a slot was free", 0));
    }
    const limit = this.limit();
    if (this.inUse < limit && this.queue.length === 0) {
      return Promise.resolve(this.grant(0, deadlineAt));
    }
    // UNAVAILABLE, not RESOURCE_EXHAUSTED: the dependency is saturated, we
    // are not. The edge's intake controller reads RESOURCE_EXHAUSTED as
    // "this system is overloaded" and must not cut all traffic because one
    // dependency is slow.
    // The pushback hint: when a call arriving now could be done (a slot,
    // then its run). A retry of this call sooner would meet the same wait;
    // one that cannot fit its deadline after that long is not made at all.
    const expectedWaitMs = this.expectedWaitMs(this.queue.length + 1, limit, now);
    const serviceMs = this.serviceMs(now);
    if (this.queue.length >= this.queueLimit(now)) {
      return Promise.reject(
        this.rejection("full", Code.Unavailable, `bulkhead full (${this.inUse} in use, ${this.queue.length} queued)`, 0, expectedWaitMs + serviceMs),
      );
    }
    // Queueing is worth it only if the call can get a slot and then run
    // before its deadline: otherwise it would hold a queue place (and the
    // slots of every hop above us) only to time out. Refused now, it fails
    // fast and its caller's breaker sees a failure in milliseconds.
    if (deadlineAt !== undefined && now + expectedWaitMs + serviceMs > deadlineAt) {
      return Promise.reject(
        this.rejection(
          "expected_wait",
          Code.Unavailable,
          `expected wait for a slot ${Math.ceil(expectedWaitMs)} ms + ${Math.ceil(serviceMs)} ms to run exceeds the ${Math.max(0, Math.floor(deadlineAt - now))} ms left (${this.inUse} in use, ${this.queue.length} queued)`,
          0,
          expectedWaitMs + serviceMs,
        ),
      );
    }
    const { promise } = this.queue.enqueue({
      deadlineAt,
      signal,
      leave: (reason, waitedMs) => ({
        // "full" cannot happen: the queue is unbounded and the bound checked above, with its pushback hint.
        error:
          reason === "aborted" && signal !== undefined
            ? this.rejectAborted(signal, "while queued", waitedMs)
            : this.rejection("deadline", Code.DeadlineExceeded, "deadline passed while queued", waitedMs),
      }),
    });
    this.listeners.emit({ type: "queued", bulkhead: this.name, queued: this.queue.length });
    this.armWatch();
    return promise;
  }

  /**
   * A slot now, if one is free and the call can still start (signal not
   * aborted, deadline not passed): the same grant `acquire` gives, without
   * a promise. Undefined otherwise; then `acquire` decides (queue or refuse,
   * with its reason). The call path takes a free slot through this: one
   * promise and microtask less per call.
   */
  tryAcquire(opts: AcquireOptions = {}): Release | undefined {
    const { deadlineAt, signal } = opts;
    if (signal?.aborted) return undefined;
    if (this.queue.length !== 0 || this.inUse >= this.limit()) return undefined;
    if (deadlineAt !== undefined && deadlineAt <= this.clock.now()) return undefined;
    return this.grant(0, deadlineAt);
  }

  /** Runs `fn` in a slot, releasing it when `fn` settles, whatever the outcome (a failure is not a latency sample). */
  async run<T>(fn: () => Promise<T>, opts?: AcquireOptions): Promise<T> {
    const release = await this.acquire(opts);
    let outcome: ReleaseOutcome = "ignored";
    try {
      const result = await fn();
      outcome = "ok";
      return result;
    } finally {
      release(outcome);
    }
  }

  /**
   * How long a call at `position` in the queue (1 = next) can expect to
   * wait: service time x position / limit (slots free at limit / service
   * time per ms on average). 0 without any history.
   *
   * When the running calls are overdue (half of them have run more than
   * `overdueFactor` x the mean hold time: the dependency has stalled), hold
   * times no longer predict anything, and the only sure bound is the
   * running calls' own deadlines: the call waits at least until the
   * position-th of them has passed.
   */
  expectedWaitMs(position: number, limit = this.limit(), now = this.clock.now()): number {
    const average = (this.serviceMs(now) * position) / limit;
    if (!this.stalled(now)) return average;
    const ends = [...this.running].flatMap((r) => (r.deadlineAt === undefined ? [] : [r.deadlineAt])).sort((a, b) => a - b);
    const end = ends[Math.min(position, ends.length) - 1];
    return end === undefined ? average : Math.max(average, end - now);
  }

  /**
   * At least half the running calls have run more than `overdueFactor` x
   * the mean hold time, and no call has finished well for as long. One slow
   * call is the tail of a busy dependency (a saturated 2-core machine shows
   * several per second), not a stall: treating it as one refused calls that
   * would have been served in time. In a stall every running call ages
   * together, and none is served; calls that still finish well are a
   * backlog being worked off (after a restart, or in overload), for which
   * the expected wait is the estimate from service times.
   */
  private overdue(now: number): boolean {
    const hold = this.holdTime.meanMs();
    if (!(hold > 0) || this.running.size === 0) return false;
    if (now - this.servedAt <= overdueFactor * hold) return false;
    let late = 0;
    for (const r of this.running) if (now - this.startOf(r) > overdueFactor * hold) late++;
    return late * 2 >= this.running.size;
  }

  /**
   * Overdue, and not known to be waiting out a restart: the running calls
   * hold their slots until their deadlines. A classification still pending
   * counts as a restart, so nothing is refused in the round trip it takes.
   */
  private stalled(now: number): boolean {
    if (!this.overdue(now)) return false;
    if (this.classifyStall === undefined) return true;
    this.classify(now);
    return this.stallKind?.kind === "stall";
  }

  /**
   * Waiting out a dependency's restart: the long holds are not the
   * dependency's latency. A verdict holds until the next one replaces it
   * (the watch asks again every `classifiedForMs` while calls are overdue)
   * or until nothing is overdue any more; the first one pending counts as
   * a restart.
   */
  private restarting(now: number): boolean {
    if (this.stallKind === undefined) return this.classifying || this.heldThroughRestart > 0;
    if (this.stallKind.until <= now && !this.overdue(now)) {
      this.stallKind = undefined;
      return this.classifying || this.heldThroughRestart > 0;
    }
    return this.stallKind.kind !== "stall";
  }

  /** The queue's bound now: larger while the dependency waits out a restart and until the calls held through it are done. */
  private queueLimit(now: number): number {
    return this.classifyStall !== undefined && this.restarting(now) ? this.maxQueue * restartQueueFactor : this.maxQueue;
  }

  /** From when a running call's age counts: a call held through a restart, from the last sign that those calls move. */
  private startOf(r: RunningCall): number {
    return r.heldThroughRestart ? Math.max(r.at, this.heldMovedAt) : r.at;
  }

  /** The dependency says it waits out a restart: the calls running now wait with it. */
  private noteRestart(now: number): void {
    this.heldMovedAt = now;
    for (const r of this.running) {
      if (r.heldThroughRestart) continue;
      r.heldThroughRestart = true;
      this.heldThroughRestart++;
    }
  }

  /** Asks the classifier, unless an answer holds or one is pending; sheds the queue when the answer is "stall". */
  private classify(now: number): void {
    if (this.classifying || this.classifyStall === undefined) return;
    if (this.stallKind !== undefined && this.stallKind.until > now) return;
    this.classifying = true;
    this.classifyStall()
      .catch((): StallKind => "stall")
      .then((kind) => {
        this.classifying = false;
        const at = this.clock.now();
        if (kind === "stall" && this.stallKind?.kind !== "stall" && this.stallKind?.kind !== "suspected") {
          this.stallKind = { kind: "suspected", until: at + suspectedForMs };
          return;
        }
        this.stallKind = { kind, until: at + classifiedForMs };
        if (kind === "stall") this.shedQueue(at);
        else {
          this.noteRestart(at);
          this.listeners.emit({ type: "stalled", bulkhead: this.name, kind, shed: 0 });
        }
      });
  }

  /** Refuses every queued call whose wait, expected as in a stall, no longer fits its deadline. */
  private shedQueue(now: number): void {
    if (!this.overdue(now)) return;
    const limit = this.limit();
    const serviceMs = this.serviceMs(now);
    const shed = this.queue.sweep((entry, position) => {
      if (entry.deadlineAt === undefined) return undefined;
      const expectedMs = this.expectedWaitMs(position, limit, now) + serviceMs;
      if (now + expectedMs <= entry.deadlineAt) return undefined;
      return {
        error: this.rejection(
          "expected_wait",
          Code.Unavailable,
          `dependency stalled: expected wait for a slot ${Math.ceil(expectedMs - serviceMs)} ms + ${Math.ceil(serviceMs)} ms to run exceeds the ${Math.max(0, Math.floor(entry.deadlineAt - now))} ms left (${this.inUse} in use, ${this.queue.length} queued)`,
          now - entry.enqueuedAt,
          expectedMs,
        ),
      };
    });
    if (shed > 0) this.listeners.emit({ type: "stalled", bulkhead: this.name, kind: "stall", shed });
  }

  /**
   * While calls queue (or, with a classifier, run), looks every few hold
   * times (at least every 25 ms) whether the running calls became overdue:
   * a stall has no events of its own, the queued calls must not wait for
   * their deadlines to learn it, and callers above learn of a restart only
   * once this bulkhead has asked (restart-signal.ts in the runtime).
   */
  private armWatch(): void {
    if (this.cancelWatch !== undefined || !this.watching()) return;
    const everyMs = Math.max(watchMinMs, overdueFactor * this.holdTime.meanMs() * 0.5);
    this.cancelWatch = this.scheduler.setTimeout(() => {
      this.cancelWatch = undefined;
      if (!this.watching()) return;
      const now = this.clock.now();
      if (this.stalled(now)) this.shedQueue(now);
      this.armWatch();
    }, everyMs);
  }

  private watching(): boolean {
    return this.queue.length > 0 || (this.classifyStall !== undefined && this.inUse > 0);
  }

  private oldestAgeMs(now: number): number {
    let oldest = now;
    for (const r of this.running) oldest = Math.min(oldest, this.startOf(r));
    return now - oldest;
  }

  stats(): BulkheadStats {
    const r = this.rejectedByReason;
    return {
      name: this.name,
      maxConcurrent: this.limit(),
      maxQueue: this.maxQueue,
      serviceMs: this.serviceMs(this.clock.now()),
      inUse: this.inUse,
      queued: this.queue.length,
      acquired: this.acquiredCount,
      rejected: r.full + r.expected_wait + r.deadline + r.canceled,
      rejectedByReason: { ...r },
    };
  }

  private serviceMs(now: number): number {
    // A dependency back from a restart serves as fast as before it: the
    // running calls' age says when they started waiting, not how long a call takes.
    if (this.restarting(now)) return this.holdTime.meanMs();
    return Math.max(this.holdTime.meanMs(), Math.min(this.oldestAgeMs(now), now - this.servedAt));
  }

  private grant(waitedMs: number, deadlineAt: number | undefined): Release {
    this.inUse++;
    this.acquiredCount++;
    const at = this.clock.now();
    // A call that starts while the dependency waits out a restart waits with it.
    const slot: RunningCall = { at, deadlineAt, heldThroughRestart: this.stallKind?.kind === "restart" && this.stallKind.until > at };
    if (slot.heldThroughRestart) this.heldThroughRestart++;
    this.running.add(slot);
    if (this.classifyStall !== undefined) this.armWatch();
    let released = false;
    this.listeners.emit({ type: "acquired", bulkhead: this.name, waitedMs });
    return (outcome: ReleaseOutcome = "ok") => {
      if (released) return;
      released = true;
      const heldMs = this.clock.now() - slot.at;
      const inFlight = this.inUse;
      this.inUse--;
      this.running.delete(slot);
      const now = this.clock.now();
      if (outcome === "ok" || outcome === "restart") this.servedAt = now;
      if (slot.heldThroughRestart) {
        this.heldThroughRestart--;
        this.heldMovedAt = now;
      }
      // A call held through a dependency's restart says nothing about its service time.
      const throughRestart =
        outcome === "restart" || slot.heldThroughRestart || (this.restarting(now) && heldMs > overdueFactor * Math.max(1, this.holdTime.meanMs()));
      if (!throughRestart) {
        // A call that ran out of its deadline says only that service took longer than that: a
        // stall's deadlines in the mean would hide the next stall (overdue is a multiple of it)
        // until enough calls were served again. The running calls' silence stands in meanwhile.
        if (outcome !== "dropped") this.holdTime.observe(heldMs);
        if (outcome !== "ignored") this.limiter?.onSample({ durationMs: heldMs, inFlight, dropped: outcome === "dropped" });
      }
      this.listeners.emit({ type: "released", bulkhead: this.name, heldMs });
      this.drain();
    };
  }

  /** Hands free slots to queued entries in FIFO order; the queue drops those that can no longer start. */
  private drain(): void {
    while (this.inUse < this.limit()) {
      if (!this.queue.grantNext((waitedMs, entry) => this.grant(waitedMs, entry.deadlineAt))) break;
    }
    if (!this.watching()) {
      this.cancelWatch?.();
      this.cancelWatch = undefined;
    }
  }

  private rejectAborted(signal: AbortSignal, when: string, waitedMs: number): ConnectError {
    // A call scope aborts with reason "deadline" when its deadline fires:
    // report that as what it is, not as the caller cancelling.
    return signal.reason === "deadline"
      ? this.rejection("deadline", Code.DeadlineExceeded, `deadline passed ${when}`, waitedMs)
      : this.rejection("canceled", Code.Canceled, `caller went away ${when}`, waitedMs);
  }

  private rejection(reason: BulkheadRejectReason, code: Code, message: string, waitedMs: number, retryAfterMs?: number): ConnectError {
    this.rejectedByReason[reason]++;
    this.listeners.emit({ type: "rejected", bulkhead: this.name, reason, waitedMs });
    const kind: LocalRejectionKind = rejectionKinds[reason];
    if (retryAfterMs === undefined) return markLocalRejection(new ConnectError(`${this.name}: ${message}`, code), { kind, dependency: this.name });
    // At least 1 ms: "0" would read as "come back at once".
    const hintMs = Math.max(1, Math.ceil(retryAfterMs));
    return markLocalRejection(new ConnectError(`${this.name}: ${message}`, code, pushbackHeaders(hintMs)), {
      kind,
      dependency: this.name,
      retryAfterMs: hintMs,
    });
  }
}

interface RunningCall {
  readonly at: number;
  readonly deadlineAt: number | undefined;
  heldThroughRestart: boolean;
}

/**
 * While the dependency waits out a restart, the queue holds this many times
 * `maxQueue`: a restart's arrivals are served when it is back, within their
 * deadlines, and a queue sized for normal service would refuse them in its
 * first second (at 60 calls/s, a queue of 32 is full in half a second).
 */
const restartQueueFactor = 4;
/** Running calls older than this many mean hold times mean the dependency has stalled. */
const overdueFactor = 10;
/** A classification of overdue calls holds this long; the watch asks again after it while they stay overdue. */
const classifiedForMs = 250;
/** A first "stall" is asked again after this, and confirmed by a second. */
const suspectedForMs = 100;
/** The watch looks at least this far apart. */
const watchMinMs = 25;

const rejectionKinds: Record<BulkheadRejectReason, LocalRejectionKind> = {
  full: "bulkhead_full",
  expected_wait: "bulkhead_expected_wait",
  deadline: "bulkhead_deadline",
  canceled: "bulkhead_canceled",
};
