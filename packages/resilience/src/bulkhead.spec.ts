import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import { type BulkheadEvent, Bulkhead, type BulkheadOptions } from "./bulkhead.js";
import { localRejection } from "./local-rejection.js";
import { FakeScheduler, type Scheduler } from "./scheduler.js";

/** Lets promise callbacks run (no time passes: the clock is fake). */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Observes a promise's state without awaiting it. */
function watch<T>(p: Promise<T>) {
  const w = { state: "pending" as "pending" | "fulfilled" | "rejected", value: undefined as T | undefined, error: undefined as unknown };
  p.then(
    (v) => ((w.state = "fulfilled"), (w.value = v)),
    (e: unknown) => ((w.state = "rejected"), (w.error = e)),
  );
  return w;
}

function setup(overrides: Partial<BulkheadOptions> = {}) {
  const clock = new FakeScheduler(1_000);
  const events: BulkheadEvent[] = [];
  const bulkhead = new Bulkhead({ name: "pricing-db", maxConcurrent: 2, maxQueue: 2, clock, scheduler: clock, ...overrides });
  bulkhead.onEvent((e) => events.push(e));
  return { clock, bulkhead, events };
}

function assertConnectError(err: unknown, code: Code, message: RegExp): void {
  assert.ok(err instanceof ConnectError, `not a ConnectError: ${String(err)}`);
  assert.equal(err.code, code, `code ${Code[err.code]}: ${err.message}`);
  assert.match(err.rawMessage, message);
}

describe("Bulkhead", () => {
  it("grants up to maxConcurrent slots at once", async () => {
    const { bulkhead } = setup();
    await bulkhead.acquire();
    await bulkhead.acquire();
    assert.equal(bulkhead.stats().inUse, 2);
    assert.equal(bulkhead.stats().queued, 0);
  });

  it("queues beyond that and hands freed slots out in FIFO order", async () => {
    const { bulkhead, clock, events } = setup();
    const r1 = await bulkhead.acquire();
    const r2 = await bulkhead.acquire();
    const a = watch(bulkhead.acquire());
    const b = watch(bulkhead.acquire());
    await flush();
    assert.equal(a.state, "pending");
    assert.equal(bulkhead.stats().queued, 2);
    clock.advance(30);
    r2();
    await flush();
    assert.equal(a.state, "fulfilled");
    assert.equal(b.state, "pending");
    r1();
    await flush();
    assert.equal(b.state, "fulfilled");
    assert.deepEqual(bulkhead.stats().inUse, 2);
    assert.deepEqual(
      events.filter((e) => e.type === "acquired").map((e) => e.type === "acquired" && e.waitedMs),
      [0, 0, 30, 30],
    );
  });

  it("rejects at once with RESOURCE_EXHAUSTED when all slots are busy and the queue is full", async () => {
    const { bulkhead, events } = setup();
    await bulkhead.acquire();
    await bulkhead.acquire();
    void bulkhead.acquire();
    void bulkhead.acquire();
    const err = await bulkhead.acquire().catch((e: unknown) => e);
    assertConnectError(err, Code.Unavailable, /^pricing-db: bulkhead full \(2 in use, 2 queued\)$/);
    assert.deepEqual(localRejection(err), { kind: "bulkhead_full", dependency: "pricing-db" });
    assert.equal(bulkhead.stats().rejected, 1);
    assert.equal(bulkhead.stats().rejectedByReason.full, 1);
    assert.deepEqual(events.at(-1), { type: "rejected", bulkhead: "pricing-db", reason: "full", waitedMs: 0 });
  });

  it("with maxQueue 0 rejects as soon as all slots are busy", async () => {
    const { bulkhead } = setup({ maxConcurrent: 1, maxQueue: 0 });
    await bulkhead.acquire();
    const err = await bulkhead.acquire().catch((e: unknown) => e);
    assertConnectError(err, Code.Unavailable, /bulkhead full \(1 in use, 0 queued\)/);
  });

  it("drops a queued entry whose deadline passes, with DEADLINE_EXCEEDED", async () => {
    const { bulkhead, clock, events } = setup({ maxConcurrent: 1 });
    const release = await bulkhead.acquire();
    const late = watch(bulkhead.acquire({ deadlineAt: clock.now() + 100 }));
    const patient = watch(bulkhead.acquire());
    clock.advance(99);
    await flush();
    assert.equal(late.state, "pending");
    clock.advance(1);
    await flush();
    assert.equal(late.state, "rejected");
    assertConnectError(late.error, Code.DeadlineExceeded, /^pricing-db: deadline passed while queued$/);
    assert.equal(localRejection(late.error)?.kind, "bulkhead_deadline");
    assert.equal(bulkhead.stats().queued, 1);
    assert.deepEqual(
      events.find((e) => e.type === "rejected"),
      { type: "rejected", bulkhead: "pricing-db", reason: "deadline", waitedMs: 100 },
    );
    release();
    await flush();
    assert.equal(patient.state, "fulfilled");
  });

  it("refuses at once when the deadline has already passed, without taking a slot", async () => {
    const { bulkhead, clock } = setup();
    const err = await bulkhead.acquire({ deadlineAt: clock.now() }).catch((e: unknown) => e);
    assertConnectError(err, Code.DeadlineExceeded, /deadline passed before a slot was free/);
    assert.equal(bulkhead.stats().inUse, 0);
    assert.equal(bulkhead.stats().rejectedByReason.deadline, 1);
  });

  it("skips entries that expired in the queue when a slot frees (expired work never starts)", async () => {
    // A scheduler that never fires: only the check on release can drop the entry.
    const never: Scheduler = { setTimeout: () => () => {} };
    const { bulkhead, clock } = setup({ maxConcurrent: 1, scheduler: never });
    const release = await bulkhead.acquire();
    const expired = watch(bulkhead.acquire({ deadlineAt: clock.now() + 50 }));
    const next = watch(bulkhead.acquire({ deadlineAt: clock.now() + 500 }));
    clock.advance(50);
    release();
    await flush();
    assert.equal(expired.state, "rejected");
    assertConnectError(expired.error, Code.DeadlineExceeded, /deadline passed while queued/);
    assert.equal(next.state, "fulfilled");
    assert.equal(bulkhead.stats().inUse, 1);
  });

  it("removes a queued entry whose caller aborts, with CANCELED", async () => {
    const { bulkhead } = setup({ maxConcurrent: 1 });
    const release = await bulkhead.acquire();
    const ac = new AbortController();
    const gone = watch(bulkhead.acquire({ signal: ac.signal }));
    const next = watch(bulkhead.acquire());
    ac.abort("cancelled");
    await flush();
    assert.equal(gone.state, "rejected");
    assertConnectError(gone.error, Code.Canceled, /^pricing-db: caller went away while queued$/);
    assert.equal(localRejection(gone.error)?.kind, "bulkhead_canceled");
    assert.equal(bulkhead.stats().queued, 1);
    release();
    await flush();
    assert.equal(next.state, "fulfilled");
  });

  it("reports a call scope's deadline abort as DEADLINE_EXCEEDED", async () => {
    const { bulkhead } = setup({ maxConcurrent: 1 });
    await bulkhead.acquire();
    const ac = new AbortController();
    const p = bulkhead.acquire({ signal: ac.signal }).catch((e: unknown) => e);
    ac.abort("deadline");
    assertConnectError(await p, Code.DeadlineExceeded, /deadline passed while queued/);
  });

  it("refuses a caller that has already gone", async () => {
    const { bulkhead } = setup();
    const err = await bulkhead.acquire({ signal: AbortSignal.abort("cancelled") }).catch((e: unknown) => e);
    assertConnectError(err, Code.Canceled, /caller went away before a slot was free/);
    assert.equal(bulkhead.stats().inUse, 0);
  });

  it("cleans up the deadline timer and abort listener of an entry that got its slot", async () => {
    const { bulkhead, clock } = setup({ maxConcurrent: 1 });
    const release = await bulkhead.acquire();
    const ac = new AbortController();
    const waiting = bulkhead.acquire({ deadlineAt: clock.now() + 100, signal: ac.signal });
    assert.equal(clock.pendingTimers(), 1);
    release();
    const second = await waiting;
    assert.equal(clock.pendingTimers(), 0);
    ac.abort("cancelled");
    clock.advance(1_000);
    assert.equal(bulkhead.stats().inUse, 1);
    assert.equal(bulkhead.stats().rejected, 0);
    second();
    assert.equal(bulkhead.stats().inUse, 0);
  });

  it("release is idempotent", async () => {
    const { bulkhead } = setup({ maxConcurrent: 1 });
    const release = await bulkhead.acquire();
    const queued = watch(bulkhead.acquire());
    const queued2 = watch(bulkhead.acquire());
    release();
    release();
    await flush();
    assert.equal(queued.state, "fulfilled");
    assert.equal(queued2.state, "pending");
    assert.equal(bulkhead.stats().inUse, 1);
  });

  it("run() releases the slot after success and after failure", async () => {
    const { bulkhead } = setup({ maxConcurrent: 1 });
    assert.equal(await bulkhead.run(async () => 42), 42);
    assert.equal(bulkhead.stats().inUse, 0);
    await assert.rejects(
      bulkhead.run(async () => {
        throw new Error("query failed");
      }),
      /query failed/,
    );
    assert.equal(bulkhead.stats().inUse, 0);
    assert.equal(bulkhead.stats().acquired, 2);
  });

  it("run() does not call fn when it cannot get a slot", async () => {
    const { bulkhead } = setup({ maxConcurrent: 1, maxQueue: 0 });
    await bulkhead.acquire();
    let called = 0;
    await assert.rejects(bulkhead.run(async () => called++), (e: unknown) => e instanceof ConnectError && e.code === Code.Unavailable);
    assert.equal(called, 0);
  });

  it("reports events for metrics: queued, acquired with wait, released with hold time", async () => {
    const { bulkhead, clock, events } = setup({ maxConcurrent: 1 });
    const r1 = await bulkhead.acquire();
    const p = bulkhead.acquire();
    clock.advance(20);
    r1();
    const r2 = await p;
    clock.advance(5);
    r2();
    assert.deepEqual(events, [
      { type: "acquired", bulkhead: "pricing-db", waitedMs: 0 },
      { type: "queued", bulkhead: "pricing-db", queued: 1 },
      { type: "released", bulkhead: "pricing-db", heldMs: 20 },
      { type: "acquired", bulkhead: "pricing-db", waitedMs: 20 },
      { type: "released", bulkhead: "pricing-db", heldMs: 5 },
    ]);
  });

  it("keeps two dependencies independent (a slow one cannot starve the other)", async () => {
    const clock = new FakeScheduler();
    const pricing = new Bulkhead({ name: "pricing", maxConcurrent: 1, maxQueue: 0, clock, scheduler: clock });
    const orders = new Bulkhead({ name: "orders", maxConcurrent: 1, maxQueue: 0, clock, scheduler: clock });
    await pricing.acquire();
    await assert.rejects(pricing.acquire());
    const r = await orders.acquire();
    r();
  });

  it("refuses nonsensical limits", () => {
    const clock = new FakeScheduler();
    assert.throws(() => new Bulkhead({ name: "x", maxConcurrent: 0, maxQueue: 1, clock }), RangeError);
    assert.throws(() => new Bulkhead({ name: "x", maxConcurrent: 1.5, maxQueue: 1, clock }), RangeError);
    assert.throws(() => new Bulkhead({ name: "x", maxConcurrent: 1, maxQueue: -1, clock }), RangeError);
  });
});
