import { Code, ConnectError } from "@connectrpc/connect";

/**
 * The idempotency key: one rule for every hop that reads one (the gateway
 * from the client's header, orders from its request field), so a key the
 * edge lets through is never refused further in.
 *
 * A key is 1 to 255 printable ASCII characters without spaces: what an HTTP
 * header value carries unchanged, short enough to index, and the same rule
 * the public API documents (README "Idempotency").
 */

/** The request header that carries the key, on the public API and between hops (lower case, as HTTP/2 sends it). */
export const idempotencyKeyHeader = "idempotency-key";

export const maxIdempotencyKeyLength = 255;

/** Printable ASCII without spaces, as for an HTTP header token. */
const keyPattern = /^[\x21-\x7e]+$/;

/**
 * Why `key` is not a valid idempotency key, or undefined when it is.
 * `name` is what the caller knows the key as ("Idempotency-Key",
 * "idempotency_key"); the message starts with it.
 */
export function idempotencyKeyProblem(key: string, name: string): string | undefined {
  if (key === "") return `${name} is empty; omit it or send a value`;
  if (key.length > maxIdempotencyKeyLength) return `${name} must be at most ${maxIdempotencyKeyLength} characters, got ${key.length}`;
  if (!keyPattern.test(key)) return `${name} must be printable ASCII without spaces`;
  return undefined;
}

/** Throws INVALID_ARGUMENT naming the problem when `key` is not a valid idempotency key. */
export function checkIdempotencyKey(key: string, name: string): void {
  const problem = idempotencyKeyProblem(key, name);
  if (problem !== undefined) throw new ConnectError(problem, Code.InvalidArgument);
}
