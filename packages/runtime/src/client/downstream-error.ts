import { Code, ConnectError } from "@connectrpc/connect";
import { describesCallersRequest } from "@platform/resilience";
import { failedDependencyHeader, grpcRetryPushbackHeader, retryAfterHeader } from "../headers.js";

/**
 * Response metadata that may cross a hop: the server's pushback hint (both
 * of its headers, resilience's pushback.ts) and where a failure began
 * (resilience's failed-dependency.ts).
 */
const forwardedMetadata = [retryAfterHeader, grpcRetryPushbackHeader, failedDependencyHeader];

export interface DownstreamFailureContext {
  dependency: string;
  /** Our own deadline for this call had passed when it failed. */
  ownDeadlinePassed: boolean;
  /** Our caller went away (its signal aborted for a reason other than the deadline). */
  callerCancelled: boolean;
}

/**
 * Maps an error from a downstream call to the error this hop answers with.
 *
 * Always a fresh error carrying only the dependency's pushback hint and the
 * failed-dependency mark (which this hop adds, naming the dependency, to a
 * failure of the dependency's that carries none yet: the breakers above
 * then do not count it against this hop, which answered): since
 * connect-es 2.2 (#1717) an error parsed from the wire loses all its headers
 * when rethrown (so it can no longer corrupt our response, as it did in
 * 2.1.2), the hint included, which our caller's retry layer needs. And a
 * failure caused by our own deadline is DEADLINE_EXCEEDED even when HTTP/2
 * reported it as an internal stream reset. (downstream-error.spec.ts checks
 * the upstream behaviour this relies on.)
 */
export function mapDownstreamError(e: unknown, ctx: DownstreamFailureContext): ConnectError {
  const out = mapped(e, ctx);
  // The caller's own request and the caller's own cancelling are nobody's failure.
  if (!describesCallersRequest(out.code) && out.code !== Code.Canceled && !out.metadata.has(failedDependencyHeader)) {
    out.metadata.set(failedDependencyHeader, ctx.dependency);
  }
  return out;
}

function mapped(e: unknown, ctx: DownstreamFailureContext): ConnectError {
  const err = ConnectError.from(e);
  if (ctx.ownDeadlinePassed) {
    return new ConnectError(`${ctx.dependency}: no answer before the deadline`, Code.DeadlineExceeded);
  }
  if (ctx.callerCancelled) {
    return new ConnectError(`${ctx.dependency}: call abandoned because the caller went away`, Code.Canceled);
  }
  let out: ConnectError;
  if (describesCallersRequest(err.code)) {
    // The caller's own request: passed up unchanged, so the user reads the
    // same precise message the answering service wrote.
    out = new ConnectError(err.rawMessage, err.code);
    out.details.push(...err.details);
  } else if (isRefusedStream(e)) {
    // GOAWAY / REFUSED_STREAM: the server never processed the request.
    out = new ConnectError(`${ctx.dependency}: request refused before processing`, Code.Unavailable);
    neverProcessed.add(out);
  } else if (err.code === Code.Canceled) {
    // Our caller did not cancel (checked above), so the dependency or the
    // connection did: an HTTP/2 stream reset with CANCEL when the process
    // on the other side died or shut down. For our caller it is a dependency
    // that went away, which is retryable (writes carry idempotency keys).
    out = new ConnectError(`${ctx.dependency}: call cancelled by the dependency or its connection (${err.rawMessage})`, Code.Unavailable);
  } else if (err.code === Code.Aborted && isConnectionLost(e)) {
    // connect-node reports a connection reset mid-call as ABORTED (a
    // conflict, in gRPC's terms): for a caller the dependency went away.
    out = new ConnectError(`${ctx.dependency}: connection lost mid-call (${err.rawMessage})`, Code.Unavailable);
  } else {
    out = new ConnectError(`${ctx.dependency}: ${err.rawMessage}`, err.code);
    out.details.push(...err.details);
  }
  for (const name of forwardedMetadata) {
    const v = err.metadata.get(name);
    if (v !== null) out.metadata.set(name, v);
  }
  return out;
}

const neverProcessed = new WeakSet<ConnectError>();

/** True when the mapped error proves the dependency never processed the request (safe to retry). */
export function wasNeverProcessed(e: ConnectError): boolean {
  return neverProcessed.has(e);
}

/** Transport failures connect-node turns into ABORTED (see its node-error.js). */
const connectionLostCodes = new Set(["ECONNRESET", "EPIPE", "ERR_STREAM_DESTROYED", "ERR_HTTP2_INVALID_STREAM"]);

function isConnectionLost(e: unknown): boolean {
  for (let c: unknown = e, depth = 0; c !== undefined && c !== null && depth < 5; depth++) {
    if (connectionLostCodes.has(String((c as { code?: unknown }).code))) return true;
    c = (c as { cause?: unknown }).cause;
  }
  return false;
}

function isRefusedStream(e: unknown): boolean {
  for (let c: unknown = e, depth = 0; c !== undefined && c !== null && depth < 5; depth++) {
    const m = (c as { message?: unknown }).message;
    const code = (c as { code?: unknown }).code;
    if (code === "ERR_HTTP2_STREAM_ERROR" && typeof m === "string" && m.includes("NGHTTP2_REFUSED_STREAM")) return true;
    if (typeof m === "string" && m.includes("NGHTTP2_REFUSED_STREAM")) return true;
    c = (c as { cause?: unknown }).cause;
  }
  return false;
}
