import { Code, ConnectError } from "@connectrpc/connect";

export const idempotencyKeyHeader = "idempotency-key";
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
