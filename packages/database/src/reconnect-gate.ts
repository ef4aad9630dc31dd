import { type BackoffPolicy, type Clock, type Scheduler, WaitQueue, backoffDelayMs, systemClock, systemScheduler } from "@platform/resilience";

/** A wait for the database to come back that ended first: out of time, or the caller left. */
export class ReconnectWaitError extends Error {
  override readonly name = "ReconnectWaitError";
  constructor(
    readonly reason: "timeout" | "aborted",
    /** The connect error that put the gate down (the last one seen). */
    override readonly cause: unknown,
    readonly waitedMs: number,
  ) {
    super(`gave up waiting for the database to accept connections (${reason})`);
  }
}

export interface ReconnectGateOptions {
  /**
   * Opens one connection and closes it; rejects while the server still
   * refuses. Runs only while the gate is down, one at a time.
   */
  probe(): Promise<void>;
  /** Full-jitter backoff between probes. */
  backoff?: BackoffPolicy;
  random?: () => number;
  clock?: Clock;
  scheduler?: Scheduler;
  /** The gate went down (with the error) or came back up (after `downMs`). */
  onChange?: (change: { down: true; error: unknown } | { down: false; downMs: number; probes: number }) => void;
}

/**
 * Probes start at most 25 ms apart and grow to at most 250 ms: a server
 * back from a restart is found within a quarter of a second, for at most
 * four connection attempts a second from each pool while it is away.
 */
export const defaultReconnectBackoff: BackoffPolicy = { initialMs: 25, multiplier: 2, maxMs: 250 };

/**
 * Waiting for a database that refuses connections the way a restarting or
 * failing-over server does (refused, starting up, shutting down).
 *
 * Such a server is usually back within seconds, and a request whose
 * deadline outlasts the gap should be served, not failed. So the first
 * checkout that meets such a refusal puts the gate down, and checkouts wait
 * here, each within its own deadline, instead of failing. Meanwhile one
 * probe at a time, with jittered backoff, is the only connection attempt
 * the pool makes: waiting costs the server nothing, however many requests
 * wait. The first connection that succeeds (a probe's, or any new
 * connection of the pool's) lifts the gate and every waiter goes on.
 *
 * This waits for a connection; it never repeats work. A statement that
 * failed because its connection died is the caller's to retry, at the one
 * layer that retries.
 */
export class ReconnectGate {
  private readonly clock: Clock;
  private readonly scheduler: Scheduler;
  private readonly backoff: BackoffPolicy;
  private readonly random: () => number;
  private readonly waiters: WaitQueue<void>;
  private downSince: number | undefined;
  private lastError: unknown;
  private probes = 0;
  private cancelProbe: (() => void) | undefined;
  private closed = false;

  constructor(private readonly opts: ReconnectGateOptions) {
    this.clock = opts.clock ?? systemClock;
    this.scheduler = opts.scheduler ?? systemScheduler;
    this.backoff = opts.backoff ?? defaultReconnectBackoff;
    this.random = opts.random ?? Math.random;
    this.waiters = new WaitQueue({ clock: this.clock, scheduler: this.scheduler });
  }

  /** The server refused its last connection attempt and no connection has succeeded since. */
  get down(): boolean {
    return this.downSince !== undefined;
  }

  /** Checkouts waiting for the server now. */
  get waiting(): number {
    return this.waiters.length;
  }

  /** A connection attempt was refused the way a restarting server refuses: hold checkouts and probe until it answers. */
  reportRefused(error: unknown): void {
    this.lastError = error;
    if (this.downSince !== undefined || this.closed) return;
    this.downSince = this.clock.now();
    this.probes = 0;
    this.opts.onChange?.({ down: true, error });
    this.scheduleProbe();
  }

  /** A connection succeeded: the server is back. */
  reportConnected(): void {
    if (this.downSince === undefined) return;
    const downMs = this.clock.now() - this.downSince;
    this.downSince = undefined;
    this.cancelProbe?.();
    this.cancelProbe = undefined;
    this.opts.onChange?.({ down: false, downMs, probes: this.probes });
    while (this.waiters.grantNext(() => undefined)) {}
  }

  /**
   * Resolves at once while the gate is up; otherwise when it comes up.
   * Rejects with a `ReconnectWaitError` after `timeoutMs` or when `signal`
   * aborts, whichever comes first.
   */
  wait(signal: AbortSignal, timeoutMs: number): Promise<void> {
    if (this.downSince === undefined) return Promise.resolve();
    const { promise } = this.waiters.enqueue({
      deadlineAt: this.clock.now() + Math.max(0, timeoutMs),
      signal,
      leave: (reason, waitedMs) => ({ error: new ReconnectWaitError(reason === "aborted" ? "aborted" : "timeout", this.lastError, waitedMs) }),
    });
    // The queue's and the probes' timers do not keep a process alive; a
    // waiter does, until it settles (a script's transaction waiting for
    // its database must not end with the process exiting under it).
    const hold = setTimeout(() => {}, Math.max(0, timeoutMs));
    const settled = () => clearTimeout(hold);
    promise.then(settled, settled);
    return promise;
  }

  /** Stops probing; waiters leave at their own deadlines. */
  close(): void {
    this.closed = true;
    this.cancelProbe?.();
    this.cancelProbe = undefined;
  }

  private scheduleProbe(): void {
    if (this.closed || this.downSince === undefined) return;
    const delayMs = backoffDelayMs(this.probes + 1, this.backoff, this.random);
    this.cancelProbe = this.scheduler.setTimeout(() => {
      this.cancelProbe = undefined;
      this.probes++;
      this.opts.probe().then(
        () => this.reportConnected(),
        (error: unknown) => {
          this.lastError = error;
          this.scheduleProbe();
        },
      );
    }, delayMs);
  }
}
