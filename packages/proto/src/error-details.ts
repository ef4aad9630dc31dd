/**
 * The platform's refusals in gRPC's richer error model (google.rpc.Status
 * details): every refusal carries an ErrorInfo with a stable reason and the
 * platform's domain, a retryable one a RetryInfo with the delay its
 * pushback headers give too, a quota refusal a QuotaFailure. Connect sends
 * details in its JSON error body and, on gRPC and gRPC-Web, in
 * `grpc-status-details-bin`, which grpc-go, grpc-java and grpc-js clients read.
 *
 * docs/errors.md lists every reason and what a client should do about it.
 */
import { create, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { durationFromMs, durationMs } from "@bufbuild/protobuf/wkt";
import type { ConnectError } from "@connectrpc/connect";
import { BadRequestSchema, ErrorInfoSchema, QuotaFailureSchema, RetryInfoSchema } from "./gen/google/rpc/error_details_pb.js";

export * from "./gen/google/rpc/error_details_pb.js";
export * from "./gen/google/rpc/status_pb.js";

/** ErrorInfo.domain of every refusal the platform makes. */
export const errorDomain = "resilient-platform";

/** ErrorInfo.reason: stable, UPPER_SNAKE_CASE, one per way the platform refuses (docs/errors.md). */
export const refusalReasons = [
  /** The request broke a rule declared in the proto (BadRequest names the fields). */
  "INVALID_REQUEST",
  /** Every slot for the dependency is busy and its wait queue is full. */
  "BULKHEAD_FULL",
  /** The expected wait for a slot (a slow or stalled dependency) is longer than the deadline leaves. */
  "BULKHEAD_WAIT_TOO_LONG",
  /** The dependency's circuit breaker is open. */
  "BREAKER_OPEN",
  /** Too little of the deadline was left to start a call. */
  "DEADLINE_TOO_SHORT",
  /** The deadline passed while the request waited for admission or a slot. */
  "DEADLINE_EXPIRED",
  /** The server's admission queue shed the request (full, waited too long, displaced by critical work). */
  "SHED_OVERLOADED",
  /** The edge admits fewer requests while the system recovers from overload. */
  "INTAKE_REDUCED",
  /** The edge could not establish who is calling: credentials missing, invalid or expired (the log says which). */
  "UNAUTHENTICATED",
  /** The caller is known but lacks a role the method requires. */
  "PERMISSION_DENIED",
  /** The edge cannot verify tokens now: its key server has never answered. */
  "AUTH_UNAVAILABLE",
  /** The client sent requests faster than the edge's rate limit. */
  "RATE_LIMITED",
  /** The tenant used up its quota. */
  "QUOTA_EXCEEDED",
  /** The idempotency key was used before with a different request. */
  "IDEMPOTENCY_KEY_REUSED",
  /** The server is draining for shutdown. */
  "SHUTTING_DOWN",
  /** The server is still starting (waiting for a dependency of its start-up). */
  "STARTING",
  /** The service's database is unreachable or not accepting connections. */
  "DATABASE_UNAVAILABLE",
] as const;

export type RefusalReason = (typeof refusalReasons)[number];

export interface Refusal {
  reason: RefusalReason;
  /** When the caller may try again; omitted for a refusal the same request would meet again. */
  retryAfterMs?: number;
  /** ErrorInfo.metadata: e.g. the dependency refused for. */
  metadata?: Record<string, string>;
  /** QuotaFailure.violations, for QUOTA_EXCEEDED. */
  quotaViolations?: { subject: string; description: string }[];
}

/** One detail of a ConnectError, as connect-es sends it. */
export interface Detail<Desc extends DescMessage = DescMessage> {
  desc: Desc;
  value: MessageInitShape<Desc>;
}

/** The details a refusal carries: ErrorInfo, then RetryInfo and QuotaFailure when given. */
export function refusalDetails(r: Refusal): Detail[] {
  const details: Detail[] = [{ desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason: r.reason, domain: errorDomain, metadata: r.metadata ?? {} }) }];
  if (r.retryAfterMs !== undefined) {
    details.push({ desc: RetryInfoSchema, value: create(RetryInfoSchema, { retryDelay: durationFromMs(Math.max(0, Math.ceil(r.retryAfterMs))) }) });
  }
  if (r.quotaViolations !== undefined) {
    details.push({ desc: QuotaFailureSchema, value: create(QuotaFailureSchema, { violations: r.quotaViolations }) });
  }
  return details;
}

/** Adds a refusal's details to `err` and returns it. */
export function withRefusal<E extends ConnectError>(err: E, r: Refusal): E {
  err.details.push(...refusalDetails(r));
  return err;
}

/** The BadRequest of an INVALID_REQUEST refusal: one field violation per broken rule. */
export function badRequestDetails(violations: { field: string; description: string }[]): Detail[] {
  return [
    { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason: "INVALID_REQUEST", domain: errorDomain }) },
    { desc: BadRequestSchema, value: create(BadRequestSchema, { fieldViolations: violations }) },
  ];
}

/** The platform's reason for `err`, if it is one of its refusals (parsed from the wire or made here). */
export function refusalReason(err: ConnectError): string | undefined {
  const info = err.findDetails(ErrorInfoSchema).find((i) => i.domain === errorDomain);
  return info?.reason;
}

/** RetryInfo's delay in ms, or undefined when `err` carries none. */
export function retryInfoDelayMs(err: ConnectError): number | undefined {
  const info = err.findDetails(RetryInfoSchema)[0];
  return info?.retryDelay === undefined ? undefined : Math.max(0, durationMs(info.retryDelay));
}
