import assert from "node:assert/strict";
import { Code, ConnectError } from "@connectrpc/connect";

/** Awaits `promise`, asserting that it fails with `code` (and a message matching `messagePart`). */
export async function expectCode(promise: Promise<unknown>, code: Code, messagePart?: RegExp): Promise<ConnectError> {
  try {
    await promise;
  } catch (e) {
    const err = ConnectError.from(e);
    assert.equal(Code[err.code], Code[code], `expected ${Code[code]}, got ${Code[err.code]}: ${err.rawMessage}`);
    if (messagePart) assert.match(err.rawMessage, messagePart);
    return err;
  }
  assert.fail(`expected ${Code[code]}, but the call succeeded`);
}
