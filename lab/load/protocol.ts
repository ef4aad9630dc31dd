/**
 * What the runner and the load process (a separate, forked process) say to
 * each other over the IPC channel. Plain JSON-able data only.
 */

/** Constant arrival rate for a while: an open-loop phase. */
export interface RatePhase {
  durationMs: number;
  /** Requests started per second, whatever happens to earlier ones. */
  rate: number;
}

/**
 * Ends an open-loop schedule early, once the stack has fallen behind: more
 * than `failedShare` of the tries that ended have failed (and at least
 * `minFailures`), or the tries in flight exceed what the current rate sends
 * in `queueMs` (by Little's law, they have waited that long on average).
 */
export interface StopWhenBehind {
  failedShare: number;
  minFailures: number;
  queueMs: number;
}

export type LoadMode =
  /** Open loop: arrivals follow the schedule, never the responses (unless `stopWhenBehind` ends it early). */
  | { kind: "open"; phases: RatePhase[]; stopWhenBehind?: StopWhenBehind }
  /** Closed loop: `concurrency` users, each sends its next request when the last one ends. */
  | { kind: "closed"; concurrency: number; durationMs: number };

/** Shares of each request kind (any non-negative weights). */
export interface RequestMix {
  placeOrder: number;
  listProducts: number;
  getOrder: number;
}

/**
 * How a user behaves, the same for both profiles: one user operation is up
 * to `maxTries` requests. A try ends when it succeeds, fails, or the user's
 * patience runs out (the call is abandoned then). After a timeout the user
 * tries again at once (they have already waited); after an error, after
 * `errorPauseMs`, or after the server's Retry-After when `honourRetryAfter`
 * (capped at `maxRetryAfterMs`). A PlaceOrder carries one Idempotency-Key
 * for all its tries, as a checkout page that resubmits its form would.
 */
export interface UserModel {
  patienceMs: number;
  maxTries: number;
  errorPauseMs: number;
  honourRetryAfter: boolean;
  maxRetryAfterMs: number;
}

export const defaultUserModel: UserModel = { patienceMs: 2000, maxTries: 3, errorPauseMs: 500, honourRetryAfter: true, maxRetryAfterMs: 5000 };

/** One request (one try of a user operation) as the load process saw it; for attributing work per request. */
export interface TryRecord {
  /** The x-request-id it carried: `<op id>.<try>`. */
  id: string;
  kind: "placeOrder" | "listProducts" | "getOrder";
  /** ms since the load's start. */
  sentAtMs: number;
  /** "ok", a code name, or "timeout" (the user gave up). */
  outcome: string;
}

export interface LoadConfig {
  gatewayUrl: string;
  /** Epoch ms at which the first phase starts (the runner schedules faults on the same clock). */
  startAt: number;
  mode: LoadMode;
  /** The user's patience: each call carries it as its deadline and is abandoned when it passes. */
  clientTimeoutMs: number;
  /** Tries per user operation and what the user does between them (patience is clientTimeoutMs). Default: one try. */
  user?: Omit<UserModel, "patienceMs">;
  /** Return every try's record (TryRecord) in the result. */
  recordTries?: boolean;
  mix: RequestMix;
  /** PlaceOrder n uses customer_id `${customerPrefix}${n}`: one logical user operation, one id. */
  customerPrefix: string;
  /** Hard bounds: the process never sends more than this, nor holds more in flight. */
  maxRequests: number;
  maxInFlight: number;
  /** HTTP/2 connections to the gateway, used round robin. */
  connections: number;
  bucketMs: number;
}

/**
 * One time bucket: the requests sent in it and what became of them (whenever
 * they ended; every call ends within the client's timeout). Attributing
 * outcomes to the send time keeps the last seconds of a run complete.
 */
export interface Bucket {
  /** User operations that started in this bucket (their first try). */
  offered: number;
  /** Requests actually sent in this bucket: first tries and the users' retries. */
  sent?: number;
  /** Requests sent in this bucket that succeeded (goodput by send time). */
  succeeded: number;
  /** User operations started in this bucket that succeeded on some try. */
  usersServed?: number;
  /** Tries that ended because the user's patience ran out. */
  timeouts?: number;
  /** Successful PlaceOrder calls. */
  orders: number;
  /** GetOrder calls sent, and those that succeeded: the fast method, which never needs pricing. */
  readsOffered: number;
  reads: number;
  /** Failures by code (snake_case, e.g. deadline_exceeded, unavailable, resource_exhausted). */
  failed: Record<string, number>;
  /** Client-observed latency (ms) of each successful call. */
  latenciesMs: number[];
  /** Successful calls that ended in this bucket, whenever they were sent (throughput by completion time). */
  succeededEnded?: number;
}

export interface LoadResult {
  /** Epoch ms of the first phase's start, and of the last completion. */
  startedAt: number;
  endedAt: number;
  /** Length of the schedule (open) or of the run (closed), ms; an open schedule stopped early (`stopWhenBehind`) counts until the stop. */
  scheduledMs: number;
  /** The open schedule was ended early by `stopWhenBehind`, at this rate (req/s) and for this reason. */
  stoppedBehind?: { rate: number; reason: "failures" | "queue" };
  bucketMs: number;
  buckets: Bucket[];
  sent: number;
  succeeded: number;
  /** User operations started, and served on some try. */
  operations?: number;
  operationsServed?: number;
  tries?: TryRecord[];
  /** Not sent because maxInFlight or maxRequests was reached. */
  skipped: number;
  /**
   * Users who had tries left when the schedule ended and so made no more
   * (no try starts after it; the ones in flight finish). Their operations
   * count as not served, and a PlaceOrder among them is in failedOrderCustomers.
   */
  cutShort: number;
  /** customer_ids of PlaceOrder calls the user saw fail: an order stored for one of them is work nobody got. */
  failedOrderCustomers: string[];
}

/**
 * The runner forks the process with the config, waits for "ready" (modules
 * loaded, connections open: seconds under CPU contention), then sends
 * "start" with the epoch ms of the first arrival, so that the schedule and
 * the runner's fault triggers share one clock and no arrivals are due late.
 */
export type ToLoad =
  | { type: "prepare"; config: Omit<LoadConfig, "startAt"> }
  /** `phases`: an open loop's schedule, when it was not known at "prepare" (see run-load.ts, `phasesFrom`). */
  | { type: "start"; startAt: number; phases?: RatePhase[] };
export type FromLoad = { type: "ready" } | { type: "result"; result: LoadResult } | { type: "error"; message: string };
