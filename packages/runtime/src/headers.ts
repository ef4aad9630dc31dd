/**
 * Every header name the platform reads or writes, declared once.
 *
 * These are wire headers: they carry a request's deadline, identity and
 * class from one service to the next. Inside a process, per-request data
 * travels in the request context (request-context.ts), never in headers.
 */
export { grpcRetryPushbackHeader, idempotencyKeyHeader, failedDependencyHeader, retryAfterHeader } from "@platform/resilience";

/** gRPC and gRPC-Web deadline (e.g. `250m`); parsed by resilience's timeout-header.ts. */
export const grpcTimeoutHeader = "grpc-timeout";
/** Connect protocol deadline in ms. */
export const connectTimeoutHeader = "connect-timeout-ms";
/** The two deadline headers, in the order they are looked for. */
export const timeoutHeaders = [grpcTimeoutHeader, connectTimeoutHeader] as const;
export type TimeoutHeader = (typeof timeoutHeaders)[number];

/** The timeout header of a Connect protocol name ("grpc", "grpc-web", "connect"): the one connect-node would read for it. */
export function timeoutHeaderOf(protocolName: string): TimeoutHeader {
  return protocolName === "connect" ? connectTimeoutHeader : grpcTimeoutHeader;
}

/** Correlates log lines across hops; accepted from the caller when well-formed, else minted. */
export const requestIdHeader = "x-request-id";
/** How expendable the work is under overload ("critical" | "sheddable"); assigned at the edge, propagated inward. */
export const criticalityHeader = "x-criticality";
/**
 * On an answer: the request waited out a restart of a dependency or of the
 * service's database (it was parked, CallScope.park). Its caller's bulkhead
 * then takes its hold time for no latency sample (isolation-interceptor.ts),
 * and passes the mark up in its own answer.
 */
export const waitedOutRestartHeader = "x-waited-out-restart";
/** Identity of the caller, set by the edge only; inner services read it, nobody outside may set it. */
export const callerHeader = "x-caller-id";
/** The caller's tenant (quotas are per tenant), set by the edge only, like the caller's identity. */
export const tenantHeader = "x-tenant-id";
