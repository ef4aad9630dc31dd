import { randomUUID } from "node:crypto";
import type { DescMethod } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel as IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { idempotencyKeyHeader } from "@platform/runtime";

export { idempotencyKeyHeader };
export const maxIdempotencyKeyLength = 255;

/**
 * The client's Idempotency-Key header, checked at the edge so that a bad
 * key is refused before any work: printable ASCII, no spaces, at most 255
 * characters. Returns "" when absent.
 */
export function readIdempotencyKey(headers: Headers): string {
  const key = headers.get(idempotencyKeyHeader);
  if (key === null) return "";
  if (key === "") throw new ConnectError("Idempotency-Key header is empty; omit it or send a value", Code.InvalidArgument);
  if (key.length > maxIdempotencyKeyLength) {
    throw new ConnectError(`Idempotency-Key must be at most ${maxIdempotencyKeyLength} characters, got ${key.length}`, Code.InvalidArgument);
  }
  if (!/^[\x21-\x7e]+$/.test(key)) throw new ConnectError("Idempotency-Key must be printable ASCII without spaces", Code.InvalidArgument);
  return key;
}

/**
 * The key a write carries downstream: the client's, or one minted per user
 * operation, so that every retry of this request carries the same key and a
 * retried write never happens twice. (A client that repeats the whole
 * request itself must send its own key for the same guarantee.)
 */
export function edgeIdempotencyKey(headers: Headers): string {
  return readIdempotencyKey(headers) || randomUUID();
}

/**
 * Headers for a call the gateway forwards unchanged: a method the proto
 * marks IDEMPOTENT ("idempotent given its key", like PlaceOrder) always
 * carries a key, so the retry layer may repeat it; any other method carries
 * the client's key if it sent one, and is retried only if it has no side
 * effects.
 */
export function forwardedIdempotencyHeaders(method: DescMethod, headers: Headers): Record<string, string> {
  const key = method.idempotency === IdempotencyLevel.IDEMPOTENT ? edgeIdempotencyKey(headers) : readIdempotencyKey(headers);
  return key === "" ? {} : { [idempotencyKeyHeader]: key };
}
