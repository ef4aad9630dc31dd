import { Code } from "@connectrpc/connect";
import type { Clock } from "./clock.js";
import { systemClock } from "./clock.js";
import { type Scheduler, systemScheduler } from "./scheduler.js";
import { WaitQueue } from "./wait-queue.js";

export type Criticality = "critical" | "sheddable";

export interface AdmissionOptions {
  /** Requests served at once. */
  maxConcurrent: number;
  /**
   * Requests waiting for a slot. Size it as tolerable wait x throughput: a
   * longer queue only holds work whose callers will have given up.
   */
  maxQueue: number;
  /** Longest a request may wait in the queue before it is shed ("not now"). */
  maxQueueWaitMs: number;
  /** Share of the queue sheddable work may occupy; the rest is kept for critical work. */
  sheddableQueueShare?: number;
  /**
   * Admitted requests that may be parked at once (see `park` on an admitted
   * outcome); beyond it a parked request keeps counting. Default 4 x
   * maxConcurrent.
   */
  maxParked?: number;
  clock?: Clock;
  scheduler?: Scheduler;
}

export type AdmissionOutcome =
  | {
      admitted: true;
      waitedMs: number;
      release: () => void;
      /**
       * The request waits out a dependency's restart (its database refusing
       * connections, or a dependency saying it waits for one) and uses none
       * of this server meanwhile: it stops counting against `maxConcurrent`
       * until the returned function is called (calls nest; the last one
       * ends the parking), up to `maxParked` parked requests. The
       * dependency's own limits (bulkhead, connection slots) bound it then;
       * a failover does not fill this server's admission.
       */
      park: () => () => void;
    }
  | { admitted: false; code: Code; reason: ShedReason; message: string; pushbackMs: number | undefined };

export type ShedReason = "queue_full" | "queue_timeout" | "expired" | "evicted" | "cancelled";

/**
 * Server-side admission control: bounded in-flight work plus a bounded,
 * criticality-aware wait queue, applied before a request's body is read.
 *
 * - Expired work is dropped before it starts (and as soon as its deadline
 *   passes while queued), so the server never works for callers that left.
 * - When the queue is full the request is refused at once with
 *   RESOURCE_EXHAUSTED and a pushback hint: "not now", not "later, maybe".
 * - Sheddable work may fill only part of the queue; a critical request
 *   arriving at a full queue evicts the newest sheddable one.
 * - A request parked while it waits out a dependency's restart (`park`)
 *   does not count in flight.
 */
export class AdmissionController {
  private inFlight = 0;
  private parked = 0;
  private readonly maxParked: number;
  /** One wait queue per criticality (the shared primitive); critical work is served first. */
  private readonly queues: Record<Criticality, WaitQueue<AdmissionOutcome>>;
  private readonly clock: Clock;
  /** Recent service time, to turn the queue length into a pushback hint. */
  private serviceMsEwma = 10;

  constructor(private readonly opts: AdmissionOptions) {
    if (!(opts.maxConcurrent >= 1)) throw new RangeError("maxConcurrent must be at least 1");
    if (!(opts.maxQueue >= 0)) throw new RangeError("maxQueue must not be negative");
    this.maxParked = opts.maxParked ?? 4 * opts.maxConcurrent;
    this.clock = opts.clock ?? systemClock;
    const time = { clock: this.clock, scheduler: opts.scheduler ?? systemScheduler };
    this.queues = { critical: new WaitQueue(time), sheddable: new WaitQueue(time) };
  }

  stats() {
    return {
      inFlight: this.inFlight,
      parked: this.parked,
      queued: this.queues.critical.length + this.queues.sheddable.length,
      queuedCritical: this.queues.critical.length,
      queuedSheddable: this.queues.sheddable.length,
    };
  }

  /**
   * Admits now, queues, or refuses. `deadlineAt` is the request's deadline
   * on the controller's clock (undefined: none known). Call `release()` of
   * an admitted outcome when the request is done; `abandon` when the caller
   * goes away while queued.
   */
  admit(criticality: Criticality, deadlineAt: number | undefined): { outcome: Promise<AdmissionOutcome>; abandon: () => void } {
    const now = this.clock.now();
    const at = this.decideNow(now, deadlineAt);
    if (at) return settled(at);
    if (!this.hasRoomFor(criticality)) {
      const displaced =
        criticality === "critical" &&
        this.queues.sheddable.evictNewest(() => ({
          value: this.refuse("evicted", Code.ResourceExhausted, "overloaded: sheddable request displaced by critical work"),
        }));
      if (!displaced) {
        return settled(this.refuse("queue_full", Code.ResourceExhausted, `overloaded: ${this.inFlight} in flight and ${this.queued()} queued`));
      }
    }
    // The wait ends at the deadline or after maxQueueWaitMs, whichever is
    // first; which one it was decides the answer ("expired" or "not now").
    const maxWaitAt = now + this.opts.maxQueueWaitMs;
    const deadlineFirst = deadlineAt !== undefined && deadlineAt <= maxWaitAt;
    const { promise, ticket } = this.queues[criticality].enqueue({
      deadlineAt: deadlineFirst ? deadlineAt : maxWaitAt,
      leave: () => ({
        value: deadlineFirst
          ? this.refuse("expired", Code.DeadlineExceeded, "deadline passed while queued")
          : this.refuse("queue_timeout", Code.ResourceExhausted, `overloaded: queued longer than ${this.opts.maxQueueWaitMs} ms`),
      }),
    });
    return {
      outcome: promise,
      abandon: () => {
        ticket.withdraw(() => ({ value: this.refuse("cancelled", Code.Canceled, "caller went away while queued") }));
      },
    };
  }

  /**
   * `admit`'s answer when it needs no queue: admitted at once (a slot free,
   * nobody queued) or refused for a deadline already passed; otherwise
   * undefined, and the caller goes through `admit`. Without a promise, for
   * the request path's common case (the admission gate).
   */
  admitNow(deadlineAt: number | undefined): AdmissionOutcome | undefined {
    return this.decideNow(this.clock.now(), deadlineAt);
  }

  private decideNow(now: number, deadlineAt: number | undefined): AdmissionOutcome | undefined {
    if (deadlineAt !== undefined && deadlineAt <= now) return this.refuse("expired", Code.DeadlineExceeded, "deadline already passed on arrival");
    if (this.inFlight < this.opts.maxConcurrent && this.queued() === 0) return this.start(now);
    return undefined;
  }

  private queued(): number {
    return this.queues.critical.length + this.queues.sheddable.length;
  }

  private hasRoomFor(criticality: Criticality): boolean {
    const total = this.queued();
    if (total >= this.opts.maxQueue) return false;
    if (criticality === "critical") return true;
    const share = this.opts.sheddableQueueShare ?? 0.5;
    return this.queues.sheddable.length < Math.floor(this.opts.maxQueue * share);
  }

  private start(enqueuedAt: number): AdmissionOutcome {
    this.inFlight++;
    const startedAt = this.clock.now();
    let released = false;
    /** Parkings not yet ended, and whether this request left the in-flight count for them. */
    let parks = 0;
    let parked = false;
    return {
      admitted: true,
      waitedMs: startedAt - enqueuedAt,
      release: () => {
        if (released) return;
        released = true;
        if (parked) this.parked--;
        else this.inFlight--;
        parked = false;
        this.serviceMsEwma = 0.8 * this.serviceMsEwma + 0.2 * (this.clock.now() - startedAt);
        this.dispatch();
      },
      park: () => {
        if (released) return noop;
        if (parks++ === 0 && this.parked < this.maxParked) {
          parked = true;
          this.parked++;
          this.inFlight--;
          this.dispatch();
        }
        let ended = false;
        return () => {
          if (ended) return;
          ended = true;
          if (--parks > 0 || !parked || released) return;
          // Back at work, even above maxConcurrent for a moment: its answer is what it waited for.
          parked = false;
          this.parked--;
          this.inFlight++;
        };
      },
    };
  }

  /** Starts queued work while slots are free, critical first; the queues skip expired entries. */
  private dispatch(): void {
    while (this.inFlight < this.opts.maxConcurrent) {
      const start = (_waitedMs: number, entry: { enqueuedAt: number }) => this.start(entry.enqueuedAt);
      if (!this.queues.critical.grantNext(start) && !this.queues.sheddable.grantNext(start)) return;
    }
  }

  private refuse(reason: ShedReason, code: Code, message: string): AdmissionOutcome {
    // Roughly how long until the queue has drained: a hint, not a promise.
    const pushbackMs =
      code === Code.ResourceExhausted
        ? Math.min(5000, Math.max(50, Math.ceil((this.serviceMsEwma * (this.queued() + 1)) / this.opts.maxConcurrent)))
        : undefined;
    return { admitted: false, code, reason, message, pushbackMs };
  }
}

const noop = () => {};

function settled(o: AdmissionOutcome): { outcome: Promise<AdmissionOutcome>; abandon: () => void } {
  return { outcome: Promise.resolve(o), abandon: () => {} };
}
