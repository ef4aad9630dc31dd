/**
 * The request signal serve() hands to Connect (connect-adapter.ts): it ends
 * when the caller goes, with connect-node's reason, or at the request
 * context's deadline, with the error Connect's own deadline timer gave.
 * (hop-deadline.spec.ts covers the adapter as a whole, on a real serve().)
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { Code, ConnectError } from "@connectrpc/connect";
import { endedAtDeadline } from "./connect-adapter.js";

describe("endedAtDeadline", () => {
  test("the caller going away ends it with the caller's reason", () => {
    const [caller, deadline] = [new AbortController(), new AbortController()];
    const signal = endedAtDeadline(caller.signal, deadline.signal);
    const reason = new ConnectError("stream reset", Code.Canceled);
    caller.abort(reason);
    assert.equal(signal.reason, reason);
    deadline.abort("deadline");
    assert.equal(signal.reason, reason, "the first end wins");
  });

  test("the deadline ends it with Connect's own DEADLINE_EXCEEDED", () => {
    const [caller, deadline] = [new AbortController(), new AbortController()];
    const signal = endedAtDeadline(caller.signal, deadline.signal);
    assert.equal(signal.aborted, false);
    deadline.abort("deadline");
    assert.ok(signal.reason instanceof ConnectError);
    assert.deepEqual([signal.reason.code, signal.reason.rawMessage], [Code.DeadlineExceeded, "the operation timed out"]);
  });

  test("a signal already ended ends it at once", () => {
    const deadline = new AbortController();
    deadline.abort("deadline");
    assert.equal(ConnectError.from(endedAtDeadline(new AbortController().signal, deadline.signal).reason).code, Code.DeadlineExceeded);
    const caller = new AbortController();
    caller.abort("gone");
    assert.equal(endedAtDeadline(caller.signal, new AbortController().signal).reason, "gone");
  });
});
