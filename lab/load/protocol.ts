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

export type LoadMode =
  /** Open loop: arrivals follow the schedule, never the responses. */
  | { kind: "open"; phases: RatePhase[] }
  /** Closed loop: `concurrency` users, each sends its next request when the last one ends. */
  | { kind: "closed"; concurrency: number; durationMs: number };

/** Shares of each request kind (any non-negative weights). */
export interface RequestMix {
  placeOrder: number;
  listProducts: number;
  getOrder: number;
}

export interface LoadConfig {
  gatewayUrl: string;
  /** Epoch ms at which the first phase starts (the runner schedules faults on the same clock). */
  startAt: number;
  mode: LoadMode;
  /** The user's patience: each call carries it as its deadline and is abandoned when it passes. */
  clientTimeoutMs: number;
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
  offered: number;
  succeeded: number;
  /** Successful PlaceOrder calls. */
  orders: number;
  /** GetOrder calls sent, and those that succeeded: the fast method, which never needs pricing. */
  readsOffered: number;
  reads: number;
  /** Failures by code (snake_case, e.g. deadline_exceeded, unavailable, resource_exhausted). */
  failed: Record<string, number>;
  /** Client-observed latency (ms) of each successful call. */
  latenciesMs: number[];
}

export interface LoadResult {
  /** Epoch ms of the first phase's start, and of the last completion. */
  startedAt: number;
  endedAt: number;
  /** Length of the schedule (open) or of the run (closed), ms. */
  scheduledMs: number;
  bucketMs: number;
  buckets: Bucket[];
  sent: number;
  succeeded: number;
  /** Not sent because maxInFlight or maxRequests was reached. */
  skipped: number;
  /** customer_ids of PlaceOrder calls the user saw fail: an order stored for one of them is work nobody got. */
  failedOrderCustomers: string[];
}

/**
 * The runner forks the process with the config, waits for "ready" (modules
 * loaded, connections open: seconds under CPU contention), then sends
 * "start" with the epoch ms of the first arrival, so that the schedule and
 * the runner's fault triggers share one clock and no arrivals are due late.
 */
export type ToLoad = { type: "prepare"; config: Omit<LoadConfig, "startAt"> } | { type: "start"; startAt: number };
export type FromLoad = { type: "ready" } | { type: "result"; result: LoadResult } | { type: "error"; message: string };
