import { EventEmitter } from "node:events";
import { Code, ConnectError } from "@connectrpc/connect";
import Opossum from "opossum";
import { type Clock, systemClock } from "./clock.js";
import { classify, countsAgainstDependency } from "./failure-class.js";
import { Listeners } from "./listeners.js";
import { failedDependencyOf } from "./failed-dependency.js";
import { localRejection, markLocalRejection } from "./local-rejection.js";

/**
 * A circuit breaker for one dependency (invariant 6, docs/architecture.md), built on opossum for
 * what it does well (the closed/open/half-open state machine, the rolling
 * window, the reset timer) and configured around what it gets wrong by
 * default (each point below; the settings: docs/configuration.md, `BREAKER_*`):
 *
 * - `volumeThreshold` is set explicitly (opossum's 0 lets one failure open
 *   the breaker of a service that handles two requests a minute);
 * - opossum's `timeout` is off: deadlines bound calls, per call;
 * - its `capacity` is unused (its rejections would count as failures):
 *   bounded concurrency is the Bulkhead's job;
 * - its AbortController is unused: it is shared by all calls of a breaker,
 *   whereas cancellation is per call (the call scope's signal).
 *
 * Only errors that say the dependency is unhealthy count as failures; see
 * `isDependencyFailure`. The window advances on the injected clock, not on
 * opossum's interval timer, so tests control it; opossum's reset timer
 * (open -> half-open) is a real timer, which tests drive with
 * `mock.timers`.
 *
 * An open breaker also closes when a probe shows its dependency is back
 * (`probeSucceeded`: a health check that exercises what failed, run by the
 * caller out of band). A dependency that recovers is then used again
 * within one probe interval, not at the next trial of the reset timer's
 * backoff, while a dead one still sees only probes. A probe is trusted once
 * per recovery: should the breaker open again within one window of a probe
 * closing it, that open period ends by the reset timer's trial only.
 */
export interface CircuitBreakerOptions {
  /** The dependency; prefixes error messages and labels events. */
  name: string;
  /**
   * The service this breaker judges, by the name the callers' marks use
   * (failed-dependency.ts): a failure marked as another service's (one
   * further down, reported by this one) is not counted against it.
   */
  dependency?: string;
  /** Calls in the window before the failure rate is considered at all. Default 10. */
  volumeThreshold?: number;
  /** Opens when the failure rate in the window EXCEEDS this percentage. Default 50. */
  errorThresholdPercentage?: number;
  /** Length of the rolling window in ms. Default 10_000. */
  rollingCountTimeout?: number;
  /** Buckets of the rolling window. Default 10. */
  rollingCountBuckets?: number;
  /**
   * Time in ms an open breaker waits before letting a trial call through, at
   * most. Default 5_000.
   */
  resetTimeout?: number;
  /**
   * The first wait after the breaker opens from closed; each failed trial
   * doubles it, up to `resetTimeout`, and closing starts again from here.
   * A short outage is then over for the callers soon after the dependency
   * is back (one trial within this time), while a long one costs a trial
   * every `resetTimeout` only. Default: `resetTimeout` (a fixed wait).
   */
  firstResetTimeout?: number;
  /**
   * Overrides which errors count against the dependency. Local rejections
   * (bulkhead, breaker) never count, whatever this returns.
   */
  isFailure?: (err: unknown) => boolean;
  clock?: Clock;
  onEvent?: (event: CircuitBreakerEvent) => void;
}

export type CircuitState = "closed" | "open" | "half_open";

export type CircuitBreakerEvent =
  | { type: "transition"; breaker: string; from: CircuitState; to: CircuitState }
  | { type: "success"; breaker: string; durationMs: number }
  | { type: "failure"; breaker: string; durationMs: number; error: unknown }
  /** An error that reached the caller without counting against the dependency. */
  | { type: "not_counted"; breaker: string; durationMs: number; error: unknown }
  /** A call refused without running because the breaker is open or its trial is in flight. */
  | { type: "rejected"; breaker: string; state: CircuitState };

export interface CircuitBreakerStats {
  name: string;
  state: CircuitState;
  /** Cumulative counters since construction. */
  successes: number;
  failures: number;
  notCounted: number;
  rejected: number;
  opened: number;
  /** The rolling window as opossum sees it: calls (including rejected ones) and counted failures. */
  window: { calls: number; failures: number };
}

/**
 * The default failure classification: codes for which
 * `countsAgainstDependency` holds (UNAVAILABLE, INTERNAL, UNKNOWN, DATA_LOSS,
 * DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED; see failure-class.ts), and any
 * non-Connect error (a raw network error). Every other code is an answer
 * from a working server about this request, or the caller's own doing.
 * Local rejections (our own bulkhead or breaker) never count, nor does a
 * call the caller cancelled, nor a failure marked as another service's
 * than `dependency` (failed-dependency.ts): the dependency answered, and the
 * failure began further down, behind a breaker of its own. (This hop's own
 * mapping marks a failure of `dependency` with its name: that one counts.)
 */
export function isDependencyFailure(err: unknown, dependency?: string): boolean {
  if (localRejection(err) !== undefined) return false;
  const below = failedDependencyOf(err);
  if (below !== undefined && below !== dependency) return false;
  // ConnectError.from maps a TimeoutError to Canceled; for a call that is our
  // own timeout expiring, i.e. the dependency being too slow.
  if (err instanceof Error && err.name === "TimeoutError") return true;
  return countsAgainstDependency(ConnectError.from(err).code);
}

/** Outcomes that say nothing about the dependency's health either way. */
function isInconclusive(err: unknown): boolean {
  if (localRejection(err) !== undefined) return true;
  if (err instanceof Error && err.name === "TimeoutError") return false;
  return classify(ConnectError.from(err).code) === "cancelled";
}

interface CallRecord {
  counted?: boolean;
}

type Action = (fn: () => Promise<unknown>, record: CallRecord) => Promise<unknown>;

export class CircuitBreaker {
  readonly name: string;
  private readonly opossum: Opossum<Parameters<Action>, unknown>;
  private readonly clock: Clock;
  private readonly isFailure: (err: unknown) => boolean;
  private readonly resetTimeout: number;
  private readonly firstResetTimeout: number;
  /** The wait of the current (or next) open period: firstResetTimeout, doubled by each failed trial, at most resetTimeout. */
  private currentResetTimeout: number;
  private readonly buckets: number;
  private readonly bucketMs: number;
  private readonly rotator = new EventEmitter();
  private rotatedAt: number;
  private openedAt = 0;
  /** The wait of the open period the breaker is in: set when it opened (a half-open breaker has already doubled it for the next one). */
  private openPeriodMs = 0;
  private readonly windowMs: number;
  /** When a probe last closed the breaker; a probe may close it again only after a window without re-opening. */
  private closedByProbeAt: number | undefined;
  /** This open period may be ended by a probe. */
  private probeTrusted = true;
  private current: CircuitState = "closed";
  private readonly listeners = new Listeners<CircuitBreakerEvent>();
  private readonly counters = { successes: 0, failures: 0, notCounted: 0, rejected: 0, opened: 0 };

  constructor(opts: CircuitBreakerOptions) {
    this.name = opts.name;
    this.clock = opts.clock ?? systemClock;
    this.isFailure = opts.isFailure ?? ((err) => isDependencyFailure(err, opts.dependency));
    this.resetTimeout = opts.resetTimeout ?? 5_000;
    this.firstResetTimeout = Math.min(opts.firstResetTimeout ?? this.resetTimeout, this.resetTimeout);
    this.currentResetTimeout = this.firstResetTimeout;
    const rollingCountTimeout = opts.rollingCountTimeout ?? 10_000;
    this.buckets = opts.rollingCountBuckets ?? 10;
    const volumeThreshold = opts.volumeThreshold ?? 10;
    const errorThresholdPercentage = opts.errorThresholdPercentage ?? 50;
    for (const [k, v] of [
      ["resetTimeout", this.resetTimeout],
      ["firstResetTimeout", this.firstResetTimeout],
      ["rollingCountTimeout", rollingCountTimeout],
      ["rollingCountBuckets", this.buckets],
    ] as const) {
      if (!(v > 0) || !Number.isFinite(v)) throw new RangeError(`${opts.name}: ${k} must be a positive number, got ${v}`);
    }
    if (!Number.isInteger(this.buckets)) throw new RangeError(`${opts.name}: rollingCountBuckets must be an integer`);
    if (!Number.isInteger(volumeThreshold) || volumeThreshold < 1) {
      throw new RangeError(`${opts.name}: volumeThreshold must be an integer >= 1, got ${volumeThreshold}`);
    }
    if (!(errorThresholdPercentage >= 0 && errorThresholdPercentage < 100)) {
      throw new RangeError(`${opts.name}: errorThresholdPercentage must be in [0, 100), got ${errorThresholdPercentage}`);
    }
    this.bucketMs = rollingCountTimeout / this.buckets;
    this.windowMs = rollingCountTimeout;
    this.rotatedAt = this.clock.now();
    if (opts.onEvent) this.listeners.add(opts.onEvent);

    // Not async: opossum takes the returned promise as it is (and catches a
    // synchronous throw), so an async wrapper would only add a promise per call.
    const action: Action = (fn) => fn();
    this.opossum = new Opossum(action, {
      name: opts.name,
      timeout: false,
      // opossum reads options.resetTimeout each time it opens: the backoff sets it (below).
      resetTimeout: this.currentResetTimeout,
      rollingCountTimeout,
      rollingCountBuckets: this.buckets,
      volumeThreshold,
      errorThresholdPercentage,
      // opossum passes the fire() arguments after the error; the record
      // tells execute() how this call's error was counted.
      errorFilter: (err: unknown, _fn?: unknown, record?: CallRecord) => {
        // opossum judges the window right after this; a long call must be
        // judged against the window as it is now, not as it was at its start.
        this.rotate();
        const counted = this.counts(err);
        if (record) record.counted = counted;
        return !counted;
      },
      // We rotate the window from the injected clock (see rotate()), so
      // opossum starts no interval timers of its own.
      rotateBucketController: this.rotator,
      enableSnapshots: false,
      rollingPercentilesEnabled: false,
    });
    this.opossum.on("open", () => {
      this.openedAt = this.clock.now();
      this.probeTrusted = this.closedByProbeAt === undefined || this.openedAt - this.closedByProbeAt >= this.windowMs;
      this.openPeriodMs = this.currentResetTimeout;
      this.counters.opened++;
      this.transition("open");
    });
    this.opossum.on("halfOpen", () => {
      // Should this trial fail, the next open period waits twice as long (at most resetTimeout).
      this.setResetTimeout(Math.min(this.currentResetTimeout * 2, this.resetTimeout));
      this.transition("half_open");
    });
    this.opossum.on("close", () => {
      // Start the closed period with a clean window, as Hystrix does: the
      // failures that opened the breaker are still inside it and would
      // re-open it on the first new failure.
      this.clearWindow();
      this.setResetTimeout(this.firstResetTimeout);
      this.transition("closed");
    });
  }

  /** Subscribes to events (for metrics); returns an unsubscribe function. */
  onEvent(listener: (event: CircuitBreakerEvent) => void): () => void {
    return this.listeners.add(listener);
  }

  state(): CircuitState {
    return this.current;
  }

  /**
   * Runs `fn` unless the breaker is open. When open (or half-open with its
   * one trial call in flight) it throws UNAVAILABLE at once, without calling
   * `fn`; that error carries a local-rejection mark with `retryAfterMs`.
   * Errors from `fn` are rethrown unchanged.
   */
  async execute<T>(fn: () => Promise<T>): Promise<T> {
    this.rotate();
    const startedAt = this.clock.now();
    const record: CallRecord = {};
    try {
      const result = (await this.opossum.fire(fn, record)) as T;
      this.counters.successes++;
      this.listeners.emit({ type: "success", breaker: this.name, durationMs: this.clock.now() - startedAt });
      return result;
    } catch (err) {
      if (err instanceof Error && Opossum.isOurError(err)) throw this.rejection();
      const durationMs = this.clock.now() - startedAt;
      if (record.counted === true) {
        this.counters.failures++;
        this.listeners.emit({ type: "failure", breaker: this.name, durationMs, error: err });
      } else {
        this.counters.notCounted++;
        this.listeners.emit({ type: "not_counted", breaker: this.name, durationMs, error: err });
      }
      throw err;
    }
  }

  stats(): CircuitBreakerStats {
    this.rotate();
    const w = this.opossum.stats;
    return { name: this.name, state: this.current, ...this.counters, window: { calls: w.fires, failures: w.failures } };
  }

  /**
   * A probe found the dependency healthy: an open breaker closes now, unless
   * a probe already closed it within the last window and it opened again
   * (then it waits for its reset timer's trial). True when it closed.
   */
  probeSucceeded(): boolean {
    if (this.current !== "open" || !this.probeTrusted || this.opossum.isShutdown) return false;
    this.closedByProbeAt = this.clock.now();
    this.opossum.close();
    return true;
  }

  /** Stops opossum's reset timer; the breaker rejects every call afterwards. */
  dispose(): void {
    this.opossum.shutdown();
  }

  private counts(err: unknown): boolean {
    if (localRejection(err) === undefined && this.isFailure(err)) return true;
    // opossum treats an uncounted error as a success, and a success in
    // half-open closes the breaker. A trial the caller cancelled, or one our
    // own bulkhead refused, proved nothing, so there we count it as a failed
    // trial: the breaker stays open one more resetTimeout rather than
    // sending full traffic to a dependency nobody has seen answer.
    return this.opossum.halfOpen && isInconclusive(err);
  }

  private rejection(): ConnectError {
    const state = this.opossum.isShutdown ? "open" : this.current;
    this.counters.rejected++;
    this.listeners.emit({ type: "rejected", breaker: this.name, state });
    if (this.opossum.isShutdown) {
      return markLocalRejection(new ConnectError(`${this.name}: circuit breaker shut down`, Code.Unavailable), {
        kind: "circuit_open",
        dependency: this.name,
      });
    }
    if (state === "half_open") {
      return markLocalRejection(new ConnectError(`${this.name}: circuit half-open, trial call in flight`, Code.Unavailable), {
        kind: "circuit_open",
        dependency: this.name,
      });
    }
    const retryAfterMs = Math.max(0, this.openedAt + this.openPeriodMs - this.clock.now());
    const seconds = Math.max(1, Math.ceil(retryAfterMs / 1_000));
    return markLocalRejection(new ConnectError(`${this.name}: circuit open, next trial in ~${seconds}s`, Code.Unavailable), {
      kind: "circuit_open",
      dependency: this.name,
      retryAfterMs,
    });
  }

  private setResetTimeout(ms: number): void {
    this.currentResetTimeout = ms;
    // opossum 9 starts each open period's timer from `options.resetTimeout`,
    // read when it opens (lib/circuit.js, _startTimer); its typings leave
    // `options` out. circuit-breaker.spec.ts's backoff test fails if that changes.
    (this.opossum as unknown as { options: { resetTimeout: number } }).options.resetTimeout = ms;
  }

  private transition(to: CircuitState): void {
    const from = this.current;
    if (from === to) return;
    this.current = to;
    this.listeners.emit({ type: "transition", breaker: this.name, from, to });
  }

  /** Advances opossum's window by the buckets that have elapsed on our clock. */
  private rotate(): void {
    const elapsed = Math.floor((this.clock.now() - this.rotatedAt) / this.bucketMs);
    if (elapsed <= 0) return;
    for (let i = 0; i < Math.min(elapsed, this.buckets); i++) this.rotator.emit("rotate");
    this.rotatedAt += elapsed * this.bucketMs;
  }

  private clearWindow(): void {
    for (let i = 0; i < this.buckets; i++) this.rotator.emit("rotate");
  }
}
