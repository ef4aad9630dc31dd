/**
 * Pushback: an overloaded server tells its caller when (or whether) to come
 * back. Load shedding only works if the shed load does not return at once.
 *
 * Two headers, both of which travel as error metadata on Connect, gRPC and
 * gRPC-Web:
 * - `grpc-retry-pushback-ms` (gRFC A6): a non-negative integer of ms. A
 *   negative or malformed value means "do not retry this call".
 * - `retry-after` (RFC 9110): delta-seconds, or an HTTP-date.
 */

export const grpcRetryPushbackHeader = "grpc-retry-pushback-ms";
export const retryAfterHeader = "retry-after";

/**
 * Reads the server's hint: a delay in ms, "never" (do not retry), or
 * undefined when there is no usable hint.
 *
 * `grpc-retry-pushback-ms` wins when present, since it is the more precise
 * and gRPC-specific of the two. A malformed `retry-after` is ignored (as
 * RFC 9110 asks of invalid field values) rather than read as "never": only
 * gRFC A6 gives malformed values that meaning. An HTTP-date in the past
 * reads as 0.
 *
 * @param nowEpochMs wall-clock now (Date.now()) for resolving an HTTP-date.
 */
export function readPushback(headers: Headers, nowEpochMs: number): number | "never" | undefined {
  const grpc = headers.get(grpcRetryPushbackHeader);
  if (grpc !== null) {
    // A repeated header arrives joined with ", " and is malformed too.
    const v = grpc.trim();
    return /^[0-9]+$/.test(v) ? Number(v) : "never";
  }
  const retryAfter = headers.get(retryAfterHeader);
  if (retryAfter !== null) {
    const v = retryAfter.trim();
    if (/^[0-9]+$/.test(v)) return Number(v) * 1_000;
    // Date.parse accepts far more than an HTTP-date; require a letter (a day
    // or month name) so that e.g. "1.5" or "-1" are not read as years.
    if (/[A-Za-z]/.test(v)) {
      const at = Date.parse(v);
      if (Number.isFinite(at)) return Math.max(0, at - nowEpochMs);
    }
  }
  return undefined;
}

/**
 * Headers that ask the caller to wait `delayMs` before retrying, or
 * ("never") not to retry at all. `retry-after` is whole seconds rounded up,
 * so that HTTP/1.1 clients never come back earlier than asked.
 */
export function pushbackHeaders(delayMs: number | "never"): Record<string, string> {
  if (delayMs === "never") return { [grpcRetryPushbackHeader]: "-1" };
  if (!(delayMs >= 0) || !Number.isFinite(delayMs)) {
    throw new RangeError(`pushback delay must be a non-negative finite number of ms or "never", got ${delayMs}`);
  }
  const ms = Math.ceil(delayMs);
  return {
    [grpcRetryPushbackHeader]: String(ms),
    [retryAfterHeader]: String(Math.ceil(ms / 1_000)),
  };
}
