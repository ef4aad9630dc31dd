import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { abortReason, createScope, currentScope, remainingMs, runInScope } from "./call-scope.js";
import { FakeClock } from "./clock.js";

describe("call scope", () => {
  test("the deadline counts from arrival, and the remaining time follows the clock", () => {
    const clock = new FakeClock(1000);
    const scope = createScope({ timeoutMs: 300, startedAt: 950, requestId: "r", procedure: "/p", clock });
    assert.equal(scope.deadlineAt, 1250);
    assert.equal(remainingMs(scope), 250);
    clock.advance(300);
    assert.equal(remainingMs(scope), -50);
    scope.dispose();
  });

  test("a caller leaving early is a cancellation; leaving at (or near) our deadline is the deadline", () => {
    const clock = new FakeClock(0);
    const early = new AbortController();
    const a = createScope({ timeoutMs: 1000, requestId: "a", procedure: "/p", clock, parentSignals: [early.signal] });
    clock.advance(100);
    early.abort();
    assert.equal(abortReason(a), "cancelled");

    const late = new AbortController();
    const b = createScope({ timeoutMs: 1000, requestId: "b", procedure: "/p", clock, parentSignals: [late.signal] });
    clock.advance(950); // within max(50 ms, 10 %) of the deadline: the caller's own timer fired first
    late.abort();
    assert.equal(abortReason(b), "deadline");

    const shutdown = new AbortController();
    const c = createScope({ timeoutMs: 1000, requestId: "c", procedure: "/p", clock, parentSignals: [shutdown.signal] });
    shutdown.abort("shutdown");
    assert.equal(abortReason(c), "shutdown");
    for (const s of [a, b, c]) s.dispose();
  });

  test("Connect's own deadline error on a parent signal reads as the deadline", () => {
    const parent = new AbortController();
    const s = createScope({ timeoutMs: 1000, requestId: "r", procedure: "/p", clock: new FakeClock(0), parentSignals: [parent.signal] });
    parent.abort({ code: 4 });
    assert.equal(abortReason(s), "deadline");
    s.dispose();
  });

  test("the scope is visible in everything the handler awaits, and only there", async () => {
    const s = createScope({ timeoutMs: 1000, requestId: "r", procedure: "/p" });
    await runInScope(s, async () => {
      await new Promise((r) => setTimeout(r, 1));
      assert.equal(currentScope()?.requestId, "r");
    });
    assert.equal(currentScope(), undefined);
    s.dispose();
  });
});
