/**
 * One measured leg of the bench: a fixed number of closed-loop users
 * calling one method of one target for a while. The runner and the load
 * worker (a separate process) exchange these over IPC: JSON-able data only.
 */

/** gRPC over HTTP/2 without TLS, or Connect with JSON over HTTP/1.1 (what curl and browsers speak). */
export type Protocol = "grpc-h2c" | "connect-json-http1";
export const protocols: readonly Protocol[] = ["grpc-h2c", "connect-json-http1"];

/**
 * What one request is. The checkout.v1 methods are what the gateway (and
 * checkout) serve; CreateOrder and GetPrices call orders and pricing
 * directly; "db" runs one PlaceOrder's SQL statements with no Node hop at all.
 */
export type Operation =
  | "checkout.ListProducts"
  | "checkout.PlaceOrder"
  | "checkout.GetOrder"
  | "orders.CreateOrder"
  | "pricing.GetPrices"
  | "pricing.ListProducts"
  | "db.PlaceOrderStatements";

export type Target =
  | {
      kind: "rpc";
      baseUrl: string;
      protocol: Protocol;
      /** Send an Idempotency-Key header with PlaceOrder (what the gateway adds when calling checkout). */
      idempotencyHeader: boolean;
      /** Sent with every call: the access token of a platform gateway that authenticates (--jwt). */
      headers?: Record<string, string>;
    }
  | { kind: "db"; databaseUrl: string };

export interface LegSpec {
  target: Target;
  /**
   * A second target called with the same operation, alternating with
   * `target`: in blocks of requests, or in time slices (`sliceMs`).
   */
  alternate?: Target;
  /**
   * With an alternate: all users switch target together every `sliceMs`,
   * so that at any moment only one target is loaded (many users; see
   * load-worker.ts). Without it, requests alternate in blocks (one user).
   */
  sliceMs?: number;
  operation: Operation;
  /** Closed-loop users: HTTP/2 streams on one connection, or HTTP/1.1 connections (one request each at a time). */
  concurrency: number;
  durationMs: number;
  /** Hard bound on requests in the leg, whatever the duration. */
  maxRequests: number;
  /** Keep going past `durationMs` until this many requests were sent (a slow machine, one client), but never past `maxDurationMs`. */
  minRequests: number;
  maxDurationMs: number;
  /** Each call's deadline (sent as grpc-timeout / connect-timeout-ms). */
  timeoutMs: number;
  /** Makes customer ids and keys unique across legs. */
  label: string;
}

export interface TargetResult {
  /** Successful requests. */
  succeeded: number;
  /** Failures by Connect code name. */
  failed: Record<string, number>;
  /** The first failure's message for each code: what refused the work. */
  failureSamples: Record<string, string>;
  /** Latency of each successful request, ms. */
  latenciesMs: number[];
  /** Time spent in this target's calls, failed ones included, summed over users, ms (divided by the users: its share of the leg). */
  busyMs: number;
}

export interface LegResult extends TargetResult {
  /** Wall time from the first request to the last answer, ms. */
  elapsedMs: number;
  /** The alternate target's requests, when the leg had one (the fields above are then `target`'s alone). */
  alternate?: TargetResult;
}

export type ToWorker = { type: "prepare"; leg: LegSpec } | { type: "go" };
export type FromWorker = { type: "prepared" } | { type: "result"; result: LegResult } | { type: "error"; message: string };
