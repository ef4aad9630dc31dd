import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { AdmissionController, type AdmissionOutcome } from "./admission.js";
import { FakeScheduler } from "./scheduler.js";

function setup(maxConcurrent = 1, maxQueue = 4, maxQueueWaitMs = 1000) {
  const clock = new FakeScheduler();
  return { clock, ac: new AdmissionController({ maxConcurrent, maxQueue, maxQueueWaitMs, clock, scheduler: clock }) };
}

async function admitted(o: Promise<AdmissionOutcome>) {
  const r = await o;
  assert.ok(r.admitted, `expected admission, got ${r.admitted ? "" : r.reason}`);
  return r;
}

async function refused(o: Promise<AdmissionOutcome>, reason: string, code: Code) {
  const r = await o;
  assert.ok(!r.admitted, "expected a refusal");
  assert.equal(r.reason, reason);
  assert.equal(Code[r.code], Code[code]);
  return r;
}

describe("AdmissionController", () => {
  test("admits up to maxConcurrent at once, queues the rest FIFO, starts them as slots free", async () => {
    const { ac } = setup(2, 4);
    const a = await admitted(ac.admit("critical", undefined).outcome);
    const b = await admitted(ac.admit("critical", undefined).outcome);
    const order: string[] = [];
    const c = ac.admit("critical", undefined).outcome.then((o) => (order.push("c"), o));
    const d = ac.admit("critical", undefined).outcome.then((o) => (order.push("d"), o));
    assert.deepEqual(ac.stats(), { inFlight: 2, queued: 2, queuedCritical: 2, queuedSheddable: 0 });
    a.release();
    a.release(); // idempotent
    await admitted(c);
    b.release();
    await admitted(d);
    assert.deepEqual(order, ["c", "d"]);
    assert.equal(ac.stats().inFlight, 2);
  });

  test("refuses at once with RESOURCE_EXHAUSTED and a pushback hint when the queue is full", async () => {
    const { ac } = setup(1, 1);
    await admitted(ac.admit("critical", undefined).outcome);
    void ac.admit("critical", undefined).outcome;
    const r = await refused(ac.admit("critical", undefined).outcome, "queue_full", Code.ResourceExhausted);
    assert.ok(!r.admitted && r.pushbackMs !== undefined && r.pushbackMs >= 50);
  });

  test("drops a request whose deadline passes while queued, before it starts", async () => {
    const { ac, clock } = setup(1, 4);
    const first = await admitted(ac.admit("critical", undefined).outcome);
    const queued = ac.admit("critical", clock.now() + 100).outcome;
    clock.advance(100);
    await refused(queued, "expired", Code.DeadlineExceeded);
    first.release();
    assert.equal(ac.stats().inFlight, 0, "the expired request never started");
  });

  test("refuses work that arrives already expired", async () => {
    const { ac, clock } = setup();
    await refused(ac.admit("critical", clock.now()).outcome, "expired", Code.DeadlineExceeded);
  });

  test("sheds work queued longer than the tolerable wait", async () => {
    const { ac, clock } = setup(1, 4, 200);
    await admitted(ac.admit("critical", undefined).outcome);
    const queued = ac.admit("critical", clock.now() + 10_000).outcome;
    clock.advance(200);
    await refused(queued, "queue_timeout", Code.ResourceExhausted);
  });

  test("sheddable work fills only its share of the queue; critical work displaces it and goes first", async () => {
    const { ac } = setup(1, 4);
    const running = await admitted(ac.admit("critical", undefined).outcome);
    const s1 = ac.admit("sheddable", undefined).outcome;
    const s2 = ac.admit("sheddable", undefined).outcome;
    await refused(ac.admit("sheddable", undefined).outcome, "queue_full", Code.ResourceExhausted);
    const c1 = ac.admit("critical", undefined).outcome;
    const c2 = ac.admit("critical", undefined).outcome;
    const c3 = ac.admit("critical", undefined).outcome; // queue full: evicts the newest sheddable
    await refused(s2, "evicted", Code.ResourceExhausted);
    running.release();
    const first = await admitted(c1);
    first.release();
    (await admitted(c2)).release();
    (await admitted(c3)).release();
    await admitted(s1);
  });

  test("a caller that leaves while queued frees its place", async () => {
    const { ac } = setup(1, 1);
    const running = await admitted(ac.admit("critical", undefined).outcome);
    const { outcome, abandon } = ac.admit("critical", undefined);
    abandon();
    await refused(outcome, "cancelled", Code.Canceled);
    assert.equal(ac.stats().queued, 0);
    running.release();
    assert.equal(ac.stats().inFlight, 0);
  });
});
