import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import { checkIdempotencyKey, idempotencyKeyHeader, idempotencyKeyProblem, maxIdempotencyKeyLength } from "./idempotency-key.js";

describe("idempotency keys", () => {
  const valid = ["k", "order-1", "a".repeat(255), "!~", "550e8400-e29b-41d4-a716-446655440000", "k:1/2@x"];
  for (const key of valid) {
    it(`accepts ${JSON.stringify(key.length > 20 ? `${key.slice(0, 8)}... (${key.length})` : key)}`, () => {
      assert.equal(idempotencyKeyProblem(key, "Idempotency-Key"), undefined);
      checkIdempotencyKey(key, "Idempotency-Key");
    });
  }

  const invalid: [string, string][] = [
    ["", "Idempotency-Key is empty; omit it or send a value"],
    ["a".repeat(256), "Idempotency-Key must be at most 255 characters, got 256"],
    ["has space", "Idempotency-Key must be printable ASCII without spaces"],
    ["tab\tkey", "Idempotency-Key must be printable ASCII without spaces"],
    ["caf\u00e9", "Idempotency-Key must be printable ASCII without spaces"],
    ["line\nbreak", "Idempotency-Key must be printable ASCII without spaces"],
    ["\x7f", "Idempotency-Key must be printable ASCII without spaces"],
  ];
  for (const [key, message] of invalid) {
    it(`refuses ${JSON.stringify(key.slice(0, 12))} (${key.length} chars) with INVALID_ARGUMENT`, () => {
      assert.equal(idempotencyKeyProblem(key, "Idempotency-Key"), message);
      assert.throws(
        () => checkIdempotencyKey(key, "Idempotency-Key"),
        (e: unknown) => e instanceof ConnectError && e.code === Code.InvalidArgument && e.rawMessage === message,
      );
    });
  }

  it("names the key as the caller knows it", () => {
    assert.equal(idempotencyKeyProblem(" ", "idempotency_key"), "idempotency_key must be printable ASCII without spaces");
  });

  it("travels in one header, lower case as HTTP/2 sends it", () => {
    assert.equal(idempotencyKeyHeader, "idempotency-key");
    assert.equal(maxIdempotencyKeyLength, 255);
  });
});
