import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { abortReason, createScope, currentScope, remainingMs, runInScope, runOutsideScope, scopeTelemetry, setScopeTelemetry } from "./call-scope.js";
import { FakeClock } from "./clock.js";

describe("call scope", () => {
  test("work a request only starts runs outside its scope, and so does what that work schedules later", async () => {
    const scope = createScope({ timeoutMs: 1000, requestId: "r", procedure: "/p" });
    const seen: (string | undefined)[] = [];
    await runInScope(scope, async () => {
      seen.push(currentScope()?.requestId);
      await runOutsideScope(async () => {
        seen.push(currentScope()?.requestId);
        await new Promise((r) => setTimeout(r, 1));
        seen.push(currentScope()?.requestId);
      });
      seen.push(currentScope()?.requestId);
    });
    scope.dispose();
    assert.deepEqual(seen, ["r", undefined, undefined, "r"]);
  });

  test("given the request's deadline signal, the scope arms no timer and ends with reason deadline when it fires", (t) => {
    t.mock.timers.enable({ apis: ["setTimeout"] });
    const deadline = new AbortController();
    const scope = createScope({ timeoutMs: 50, requestId: "r", procedure: "/p", deadlineSignal: deadline.signal });
    t.mock.timers.tick(1000);
    assert.equal(scope.signal.aborted, false, "no timer of its own: only the given signal ends it");
    deadline.abort("deadline");
    assert.equal(abortReason(scope), "deadline");
    scope.dispose();
  });

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

  test("the deadline fires on the real timer with reason 'deadline', counted from arrival", async () => {
    const clock = { now: () => performance.now() };
    const s = createScope({ timeoutMs: 30, startedAt: clock.now() - 10, requestId: "r", procedure: "/p", clock });
    assert.equal(abortReason(s), undefined, "live until its deadline");
    await new Promise((resolve) => s.signal.addEventListener("abort", resolve, { once: true }));
    assert.equal(s.signal.reason, "deadline");
    assert.equal(abortReason(s), "deadline");
    s.dispose();
  });

  test("an already-expired arrival aborts with 'deadline' at once; dispose() stops the timer", async () => {
    const clock = new FakeClock(1000);
    const expired = createScope({ timeoutMs: 100, startedAt: 800, requestId: "r", procedure: "/p", clock });
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(abortReason(expired), "deadline");
    const disposed = createScope({ timeoutMs: 20, requestId: "d", procedure: "/p" });
    disposed.dispose();
    await new Promise((r) => setTimeout(r, 40));
    assert.equal(disposed.signal.aborted, false, "a disposed scope's deadline timer no longer fires");
  });

  test("a parent that aborted before the scope was created aborts it at once, classified the same way", () => {
    const clock = new FakeClock(0);
    const gone = new AbortController();
    gone.abort("client went away");
    const early = createScope({ timeoutMs: 1000, requestId: "a", procedure: "/p", clock, parentSignals: [gone.signal] });
    assert.equal(abortReason(early), "cancelled");
    const shut = new AbortController();
    shut.abort("shutdown");
    assert.equal(
      abortReason(createScope({ timeoutMs: 1000, requestId: "b", procedure: "/p", clock, parentSignals: [new AbortController().signal, shut.signal] })),
      "shutdown",
    );
    clock.advance(950);
    const nearDeadline = createScope({ timeoutMs: 1000, startedAt: 0, requestId: "c", procedure: "/p", clock, parentSignals: [gone.signal] });
    assert.equal(abortReason(nearDeadline), "deadline", "already within max(50 ms, 10 %) of the deadline");
    for (const s of [early, nearDeadline]) s.dispose();
  });

  test("'near the deadline' is max(50 ms, 10 % of the timeout) before it, inclusive", () => {
    const at = (timeoutMs: number, leaveAt: number) => {
      const clock = new FakeClock(0);
      const parent = new AbortController();
      const s = createScope({ timeoutMs, requestId: "r", procedure: "/p", clock, parentSignals: [parent.signal] });
      clock.advance(leaveAt);
      parent.abort();
      s.dispose();
      return abortReason(s);
    };
    // 10 % of 1000 ms is 100 ms: from 900 ms on it is the deadline.
    assert.equal(at(1000, 899), "cancelled");
    assert.equal(at(1000, 900), "deadline");
    // 10 % of 200 ms is 20 ms, below the 50 ms floor: from 150 ms on.
    assert.equal(at(200, 149), "cancelled");
    assert.equal(at(200, 150), "deadline");
  });

  test("an unknown abort reason reads as a cancellation; a live scope has none", () => {
    const parent = new AbortController();
    const s = createScope({ timeoutMs: 1000, requestId: "r", procedure: "/p", clock: new FakeClock(0), parentSignals: [parent.signal] });
    assert.equal(abortReason(s), undefined);
    parent.abort(new Error("socket closed"));
    assert.equal(abortReason(s), "cancelled");
    s.dispose();
  });

  test("after dispose(), a parent's abort no longer reaches the scope", () => {
    const parent = new AbortController();
    const s = createScope({ timeoutMs: 1000, requestId: "r", procedure: "/p", clock: new FakeClock(0), parentSignals: [parent.signal] });
    s.dispose();
    parent.abort();
    assert.equal(s.signal.aborted, false);
  });

  test("criticality and caller are carried only when given", () => {
    const plain = createScope({ timeoutMs: 1000, requestId: "r", procedure: "/p" });
    assert.equal("criticality" in plain || "caller" in plain, false);
    const full = createScope({ timeoutMs: 1000, requestId: "r", procedure: "/p", criticality: "sheddable", caller: "alice" });
    assert.equal(full.criticality, "sheddable");
    assert.equal(full.caller, "alice");
    for (const s of [plain, full]) s.dispose();
  });

  test("a scope's telemetry slot holds what the runtime put there, per scope", () => {
    const a = createScope({ timeoutMs: 1000, requestId: "a", procedure: "/p" });
    const b = createScope({ timeoutMs: 1000, requestId: "b", procedure: "/p" });
    setScopeTelemetry(a, { span: 1 });
    assert.deepEqual(scopeTelemetry(a), { span: 1 });
    assert.equal(scopeTelemetry(b), undefined);
    for (const s of [a, b]) s.dispose();
  });
});
