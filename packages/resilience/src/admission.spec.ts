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
  test("a request parked on a dependency stops counting: the queue moves, and it counts again when its wait ends", async () => {
    const { ac } = setup(1, 4);
    const first = await admitted(ac.admit("critical", undefined).outcome);
    const second = ac.admit("critical", undefined).outcome;
    assert.equal(ac.stats().queued, 1);
    const unpark = first.park();
    const next = await admitted(second);
    assert.deepEqual({ inFlight: ac.stats().inFlight, parked: ac.stats().parked }, { inFlight: 1, parked: 1 });
    // Nested waits (two calls at once) end the parking with the last one.
    const unparkAgain = first.park();
    unpark();
    assert.equal(ac.stats().parked, 1);
    unparkAgain();
    unparkAgain();
    assert.deepEqual({ inFlight: ac.stats().inFlight, parked: ac.stats().parked }, { inFlight: 2, parked: 0 }, "back at work, above the limit for a moment");
    const third = ac.admit("critical", undefined).outcome;
    next.release();
    assert.equal(ac.stats().queued, 1, "still at the limit: nobody starts");
    first.release();
    await admitted(third);
    assert.deepEqual({ inFlight: ac.stats().inFlight, parked: ac.stats().parked }, { inFlight: 1, parked: 0 });
  });

  test("parking is bounded (maxParked), and a request released while parked leaves no trace", async () => {
    const clock = new FakeScheduler();
    const ac = new AdmissionController({ maxConcurrent: 2, maxQueue: 4, maxQueueWaitMs: 1000, maxParked: 1, clock, scheduler: clock });
    const a = await admitted(ac.admit("critical", undefined).outcome);
    const b = await admitted(ac.admit("critical", undefined).outcome);
    a.park();
    b.park();
    assert.deepEqual({ inFlight: ac.stats().inFlight, parked: ac.stats().parked }, { inFlight: 1, parked: 1 }, "only one may park");
    a.release();
    b.release();
    assert.deepEqual({ inFlight: ac.stats().inFlight, parked: ac.stats().parked }, { inFlight: 0, parked: 0 });
  });

  test("admitNow answers what admit would when no queue is involved, and nothing otherwise", async () => {
    const { clock, ac } = setup(1, 4);
    const expired = ac.admitNow(clock.now() - 1);
    assert.ok(expired && !expired.admitted && expired.reason === "expired" && expired.code === Code.DeadlineExceeded);
    const first = ac.admitNow(undefined);
    assert.ok(first?.admitted);
    assert.equal(ac.stats().inFlight, 1);
    // Full: admit would queue, so admitNow leaves it to admit.
    assert.equal(ac.admitNow(undefined), undefined);
    const waiting = ac.admit("critical", undefined).outcome;
    first.release();
    await admitted(waiting);
    // The queued one holds the slot now: full again.
    assert.equal(ac.admitNow(undefined), undefined);
  });

  test("admits up to maxConcurrent at once, queues the rest FIFO, starts them as slots free", async () => {
    const { ac } = setup(2, 4);
    const a = await admitted(ac.admit("critical", undefined).outcome);
    const b = await admitted(ac.admit("critical", undefined).outcome);
    const order: string[] = [];
    const c = ac.admit("critical", undefined).outcome.then((o) => (order.push("c"), o));
    const d = ac.admit("critical", undefined).outcome.then((o) => (order.push("d"), o));
    assert.deepEqual(ac.stats(), { inFlight: 2, parked: 0, queued: 2, queuedCritical: 2, queuedSheddable: 0 });
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

  test("the pushback hint is the queue's drain time from the measured service time, within [50 ms, 5 s]", async () => {
    const { ac, clock } = setup(2, 4);
    // Service time measured at 1000 ms per request: the EWMA moves a fifth of the way each time.
    for (let i = 0; i < 40; i++) {
      const r = await admitted(ac.admit("critical", undefined).outcome);
      clock.advance(1000);
      r.release();
    }
    const a = await admitted(ac.admit("critical", undefined).outcome);
    const b = await admitted(ac.admit("critical", undefined).outcome);
    const queued = [1, 2, 3, 4].map(() => ac.admit("critical", undefined));
    const full = await refused(ac.admit("critical", undefined).outcome, "queue_full", Code.ResourceExhausted);
    // ~1000 ms x (4 queued + this one) / 2 slots = 2500 ms
    assert.ok(!full.admitted && full.pushbackMs! >= 2400 && full.pushbackMs! <= 2500, `hint ${!full.admitted && full.pushbackMs}`);
    for (const q of queued) q.abandon();
    a.release();
    b.release();
    // Long service times: the hint is capped at 5 s.
    for (let i = 0; i < 40; i++) {
      const r = await admitted(ac.admit("critical", undefined).outcome);
      clock.advance(60_000);
      r.release();
    }
    await admitted(ac.admit("critical", undefined).outcome);
    await admitted(ac.admit("critical", undefined).outcome);
    for (let i = 0; i < 4; i++) void ac.admit("critical", undefined).outcome;
    const capped = await refused(ac.admit("critical", undefined).outcome, "queue_full", Code.ResourceExhausted);
    assert.equal(!capped.admitted && capped.pushbackMs, 5000);
  });

  test("a deadline refusal carries no pushback hint (coming back will not help); overload refusals do", async () => {
    const { ac, clock } = setup(1, 1);
    const expired = await refused(ac.admit("critical", clock.now()).outcome, "expired", Code.DeadlineExceeded);
    assert.equal(!expired.admitted && expired.pushbackMs, undefined);
    assert.equal(!expired.admitted && expired.message, "deadline already passed on arrival");
  });

  test("a queued request reports how long it waited; the in-flight count never exceeds maxConcurrent", async () => {
    const { ac, clock } = setup(1, 4);
    const first = await admitted(ac.admit("critical", undefined).outcome);
    const second = ac.admit("critical", clock.now() + 5000).outcome;
    clock.advance(300);
    first.release();
    const started = await admitted(second);
    assert.equal(started.waitedMs, 300);
    assert.deepEqual(ac.stats(), { inFlight: 1, parked: 0, queued: 0, queuedCritical: 0, queuedSheddable: 0 });
    started.release();
    assert.equal(ac.stats().inFlight, 0);
  });

  test("when a slot frees, queued work whose deadline has passed is skipped, and the next one starts", async () => {
    // The expiry timers must not have fired yet: a scheduler that never runs them.
    const clock = new FakeScheduler();
    const lazy = { now: () => clock.now(), setTimeout: () => () => {} };
    const ac = new AdmissionController({ maxConcurrent: 1, maxQueue: 4, maxQueueWaitMs: 10_000, clock, scheduler: lazy });
    const running = await admitted(ac.admit("critical", undefined).outcome);
    const stale = ac.admit("critical", clock.now() + 100).outcome;
    const fresh = ac.admit("critical", clock.now() + 5000).outcome;
    clock.advance(100);
    running.release();
    const r = await refused(stale, "expired", Code.DeadlineExceeded);
    assert.equal(!r.admitted && r.message, "deadline passed while queued");
    await admitted(fresh);
    assert.equal(ac.stats().inFlight, 1, "only the fresh one started");
  });

  test("queue wait and deadline: whichever comes first decides, and names it", async () => {
    const { ac, clock } = setup(1, 4, 200);
    await admitted(ac.admit("critical", undefined).outcome);
    const deadlineFirst = ac.admit("critical", clock.now() + 200).outcome; // deadline == max wait: the deadline
    const waitFirst = ac.admit("critical", clock.now() + 201).outcome;
    const noDeadline = ac.admit("critical", undefined).outcome;
    clock.advance(199);
    assert.equal(ac.stats().queued, 3, "nothing refused before its time");
    clock.advance(1);
    await refused(deadlineFirst, "expired", Code.DeadlineExceeded);
    const w = await refused(waitFirst, "queue_timeout", Code.ResourceExhausted);
    assert.equal(!w.admitted && w.message, "overloaded: queued longer than 200 ms");
    await refused(noDeadline, "queue_timeout", Code.ResourceExhausted);
    assert.equal(ac.stats().queued, 0);
  });

  test("abandoning after the request started, or twice, changes nothing", async () => {
    const { ac } = setup(1, 2);
    const first = ac.admit("critical", undefined);
    const running = await admitted(first.outcome);
    first.abandon();
    assert.equal(ac.stats().inFlight, 1);
    const queued = ac.admit("critical", undefined);
    queued.abandon();
    queued.abandon();
    const r = await refused(queued.outcome, "cancelled", Code.Canceled);
    assert.equal(!r.admitted && r.message, "caller went away while queued");
    running.release();
    assert.equal(ac.stats().inFlight, 0);
  });

  test("refuses nonsensical limits", () => {
    assert.throws(() => new AdmissionController({ maxConcurrent: 0, maxQueue: 1, maxQueueWaitMs: 1 }), /maxConcurrent must be at least 1/);
    assert.throws(() => new AdmissionController({ maxConcurrent: 1, maxQueue: -1, maxQueueWaitMs: 1 }), /maxQueue must not be negative/);
    assert.doesNotThrow(() => new AdmissionController({ maxConcurrent: 1, maxQueue: 0, maxQueueWaitMs: 1 }));
  });
});
