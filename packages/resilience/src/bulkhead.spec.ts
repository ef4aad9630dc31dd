import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import { AdaptiveLimit } from "./adaptive-limit.js";
import { type BulkheadEvent, Bulkhead, type BulkheadOptions, type ConcurrencyLimiter, type Release } from "./bulkhead.js";
import { localRejection } from "./local-rejection.js";
import { FakeScheduler, type Scheduler } from "./scheduler.js";

/** Lets promise callbacks run (no time passes: the clock is fake). */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Moves the fake clock `ms` forward in 25 ms steps, letting the timers and promise callbacks of each step run. */
async function advanceInSteps(clock: { advance(ms: number): void }, ms: number): Promise<void> {
  for (let t = 0; t < ms; t += 25) {
    clock.advance(25);
    await flush();
  }
}

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
  const bulkhead = new Bulkhead({ name: "stock-db", maxConcurrent: 2, maxQueue: 2, clock, scheduler: clock, ...overrides });
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

  it("tryAcquire grants a free slot at once, as acquire does, and declines when acquire would queue or refuse", async () => {
    const { clock, bulkhead, events } = setup();
    const first = bulkhead.tryAcquire({ deadlineAt: clock.now() + 100 });
    assert.ok(first, "a free slot is granted");
    assert.equal(bulkhead.stats().inUse, 1);
    assert.deepEqual(events.at(-1), { type: "acquired", bulkhead: "stock-db", waitedMs: 0 });
    const aborted = new AbortController();
    aborted.abort("deadline");
    assert.equal(bulkhead.tryAcquire({ signal: aborted.signal }), undefined, "an aborted call takes no slot");
    assert.equal(bulkhead.tryAcquire({ deadlineAt: clock.now() }), undefined, "nor one whose deadline passed");
    assert.equal(bulkhead.stats().inUse, 1);
    assert.ok(bulkhead.tryAcquire());
    assert.equal(bulkhead.tryAcquire(), undefined, "all slots in use");
    const queued = watch(bulkhead.acquire());
    assert.equal(bulkhead.stats().queued, 1);
    first("ok");
    await flush();
    assert.equal(queued.state, "fulfilled", "a slot granted by tryAcquire is released like any other");
    assert.equal(bulkhead.stats().inUse, 2);
    assert.equal(bulkhead.tryAcquire(), undefined, "the queued call holds the freed slot");
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

  it("rejects at once with UNAVAILABLE and a pushback hint when all slots are busy and the queue is full", async () => {
    const { bulkhead, events } = setup();
    await bulkhead.acquire();
    await bulkhead.acquire();
    void bulkhead.acquire();
    void bulkhead.acquire();
    // Guards the bounded queue: the third waiter is refused at once, not queued (an unbounded queue would leave it pending).
    const third = watch(bulkhead.acquire());
    await flush();
    assert.equal(third.state, "rejected", "refused at once, not queued");
    const err = third.error;
    assertConnectError(err, Code.Unavailable, /^stock-db: bulkhead full \(2 in use, 2 queued\)$/);
    // No history yet: the hint is the 1 ms floor ("0" would read as "at once").
    assert.deepEqual(localRejection(err), { kind: "bulkhead_full", dependency: "stock-db", retryAfterMs: 1 });
    assert.equal((err as ConnectError).metadata.get("grpc-retry-pushback-ms"), "1");
    assert.equal(bulkhead.stats().rejected, 1);
    assert.equal(bulkhead.stats().rejectedByReason.full, 1);
    assert.deepEqual(events.at(-1), { type: "rejected", bulkhead: "stock-db", reason: "full", waitedMs: 0 });
  });

  it("with maxQueue 0 rejects as soon as all slots are busy", async () => {
    const { bulkhead } = setup({ maxConcurrent: 1, maxQueue: 0 });
    await bulkhead.acquire();
    const second = watch(bulkhead.acquire());
    await flush();
    assert.equal(second.state, "rejected", "refused at once, not queued");
    assertConnectError(second.error, Code.Unavailable, /bulkhead full \(1 in use, 0 queued\)/);
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
    assertConnectError(late.error, Code.DeadlineExceeded, /^stock-db: deadline passed while queued$/);
    assert.equal(localRejection(late.error)?.kind, "bulkhead_deadline");
    assert.equal(bulkhead.stats().queued, 1);
    assert.deepEqual(
      events.find((e) => e.type === "rejected"),
      { type: "rejected", bulkhead: "stock-db", reason: "deadline", waitedMs: 100 },
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
    assertConnectError(gone.error, Code.Canceled, /^stock-db: caller went away while queued$/);
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
    assert.equal(clock.pendingTimers(), 2, "the entry's deadline and the stall watch (armed while calls queue)");
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
    await assert.rejects(
      bulkhead.run(async () => called++),
      (e: unknown) => e instanceof ConnectError && e.code === Code.Unavailable,
    );
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
      { type: "acquired", bulkhead: "stock-db", waitedMs: 0 },
      { type: "queued", bulkhead: "stock-db", queued: 1 },
      { type: "released", bulkhead: "stock-db", heldMs: 20 },
      { type: "acquired", bulkhead: "stock-db", waitedMs: 20 },
      { type: "released", bulkhead: "stock-db", heldMs: 5 },
    ]);
  });

  it("keeps two dependencies independent (a slow one cannot starve the other)", async () => {
    const clock = new FakeScheduler();
    const stock = new Bulkhead({ name: "stock", maxConcurrent: 1, maxQueue: 0, clock, scheduler: clock });
    const orders = new Bulkhead({ name: "orders", maxConcurrent: 1, maxQueue: 0, clock, scheduler: clock });
    await stock.acquire();
    await assert.rejects(stock.acquire());
    const r = await orders.acquire();
    r();
  });

  describe("expected wait", () => {
    /** Gives the bulkhead a hold-time history of `ms` per call. */
    async function history(bulkhead: Bulkhead, clock: FakeScheduler, ms: number, calls = 20) {
      for (let i = 0; i < calls; i++) {
        const r = await bulkhead.acquire();
        clock.advance(ms);
        r();
      }
    }

    it("refuses before queueing when the expected wait (service time x position / limit) plus a service time exceeds the time left, with that time as pushback", async () => {
      const { bulkhead, clock, events } = setup({ maxConcurrent: 2, maxQueue: 10 });
      await history(bulkhead, clock, 100);
      await bulkhead.acquire();
      await bulkhead.acquire();
      // Position 1: 100 x 1 / 2 = 50 ms to wait + 100 to run; fits in 160.
      const first = watch(bulkhead.acquire({ deadlineAt: clock.now() + 160 }));
      // Position 2: 100 ms to wait + 100 to run; does not fit in 160.
      const err = await bulkhead.acquire({ deadlineAt: clock.now() + 160 }).catch((e: unknown) => e);
      assertConnectError(err, Code.Unavailable, /^stock-db: expected wait for a slot 100 ms \+ 100 ms to run exceeds the 160 ms left \(2 in use, 1 queued\)$/);
      // The hint: when a call arriving now could be done (wait + run).
      assert.deepEqual(localRejection(err), { kind: "bulkhead_expected_wait", dependency: "stock-db", retryAfterMs: 200 });
      assert.equal((err as ConnectError).metadata.get("grpc-retry-pushback-ms"), "200");
      assert.equal((err as ConnectError).metadata.get("retry-after"), "1");
      assert.equal(first.state, "pending");
      assert.equal(bulkhead.stats().queued, 1, "the refused call never queued");
      assert.equal(bulkhead.stats().rejectedByReason.expected_wait, 1);
      assert.deepEqual(events.at(-1), { type: "rejected", bulkhead: "stock-db", reason: "expected_wait", waitedMs: 0 });
      // Without a deadline there is nothing to compare with: it queues.
      const patient = watch(bulkhead.acquire());
      await flush();
      assert.equal(patient.state, "pending");
      assert.equal(bulkhead.stats().queued, 2);
    });

    it("counts the age of calls still running, so a dependency that stopped answering looks slow before anything finishes", async () => {
      const { bulkhead, clock } = setup({ maxConcurrent: 1, maxQueue: 10 });
      await history(bulkhead, clock, 5);
      await bulkhead.acquire(); // never finishes
      void bulkhead.acquire().catch(() => {}); // waits at position 1
      clock.advance(1_000);
      assert.equal(bulkhead.stats().serviceMs, 1_000);
      const err = await bulkhead.acquire({ deadlineAt: clock.now() + 2_500 }).catch((e: unknown) => e);
      // Position 2 of limit 1, service time >= 1000 ms: 2000 ms to wait + 1000 to run.
      assertConnectError(err, Code.Unavailable, /expected wait for a slot 2000 ms \+ 1000 ms to run exceeds the 2500 ms left \(1 in use, 1 queued\)/);
    });

    it("once the running calls are overdue (a stall), expects the wait to last until their deadlines pass, and refuses what that cannot fit", async () => {
      const { bulkhead, clock } = setup({ maxConcurrent: 2, maxQueue: 1 });
      await history(bulkhead, clock, 10);
      await bulkhead.acquire({ deadlineAt: clock.now() + 3_000 });
      clock.advance(500);
      await bulkhead.acquire({ deadlineAt: clock.now() + 3_000 });
      clock.advance(100); // the oldest has run 600 ms, 60 x the usual 10: overdue
      // Slots free for sure only at the running calls' deadlines: 2400 and 2900 ms from now.
      assert.equal(bulkhead.expectedWaitMs(1), 2_400);
      assert.equal(bulkhead.expectedWaitMs(2), 2_900);
      const err = await bulkhead.acquire({ deadlineAt: clock.now() + 2_900 }).catch((e: unknown) => e);
      assertConnectError(err, Code.Unavailable, /expected wait for a slot 2400 ms \+ 600 ms to run exceeds the 2900 ms left/);
      assert.equal(localRejection(err)?.retryAfterMs, 3_000, "come back when a slot is sure to be free, and the call run");
      assert.equal(bulkhead.stats().queued, 0, "a stall queues nothing that would only time out");
      void bulkhead.acquire().catch(() => {}); // no deadline: queues
      const full = await bulkhead.acquire().catch((e: unknown) => e);
      assertConnectError(full, Code.Unavailable, /bulkhead full/);
      assert.equal(localRejection(full)?.retryAfterMs, 2_900 + 600);
    });

    it("when the running calls stall, the calls already queued that can no longer fit are refused at once, with pushback; one whose deadline still fits keeps its place", async () => {
      const { bulkhead, clock, events } = setup({ maxConcurrent: 2, maxQueue: 10 });
      await history(bulkhead, clock, 5);
      // Two calls take the slots and never finish (a lock); five queue behind them at once.
      await bulkhead.acquire({ deadlineAt: clock.now() + 5_000 });
      await bulkhead.acquire({ deadlineAt: clock.now() + 5_000 });
      const queued = Array.from({ length: 5 }, () => watch(bulkhead.acquire({ deadlineAt: clock.now() + 5_000 })));
      const patient = watch(bulkhead.acquire({ deadlineAt: clock.now() + 60_000 }));
      await flush();
      assert.equal(bulkhead.stats().queued, 6, "queued while nothing was overdue yet");
      // No call finishes and none arrives: the watch notices the stall within a few hold times.
      clock.advance(100);
      await flush();
      assert.deepEqual(
        queued.map((q) => q.state),
        ["rejected", "rejected", "rejected", "rejected", "rejected"],
      );
      for (const q of queued) {
        assertConnectError(
          q.error,
          Code.Unavailable,
          /^stock-db: dependency stalled: expected wait for a slot \d+ ms \+ \d+ ms to run exceeds the \d+ ms left/,
        );
        assert.equal(localRejection(q.error)?.kind, "bulkhead_expected_wait");
        assert.ok((localRejection(q.error)?.retryAfterMs ?? 0) >= 4_900, "come back once the stalled calls' deadlines have passed");
      }
      assert.equal(patient.state, "pending", "a deadline the wait fits keeps its place");
      assert.equal(bulkhead.stats().queued, 1);
      assert.deepEqual(
        events.filter((e) => e.type === "stalled"),
        [{ type: "stalled", bulkhead: "stock-db", kind: "stall", shed: 5 }],
      );
    });

    it("when the dependency says it waits out a restart, overdue calls are no stall: queued calls stay, arrivals queue, and the long holds teach the limiter nothing", async () => {
      const samples: number[] = [];
      let asked = 0;
      const limiter: ConcurrencyLimiter = { limit: () => 2, onSample: (s) => void samples.push(s.durationMs) };
      const { bulkhead, clock } = setup({
        limiter,
        maxConcurrent: undefined,
        maxQueue: 10,
        classifyStall: async () => {
          asked++;
          return "restart";
        },
      });
      await history(bulkhead, clock, 5);
      samples.length = 0;
      const running = [await bulkhead.acquire({ deadlineAt: clock.now() + 3_000 }), await bulkhead.acquire({ deadlineAt: clock.now() + 3_000 })];
      const queued = Array.from({ length: 5 }, () => watch(bulkhead.acquire({ deadlineAt: clock.now() + 3_000 })));
      await advanceInSteps(clock, 1_500);
      assert.ok(asked >= 1, "the classifier was asked");
      assert.deepEqual(
        queued.map((q) => q.state),
        ["pending", "pending", "pending", "pending", "pending"],
      );
      const arrival = watch(bulkhead.acquire({ deadlineAt: clock.now() + 1_000 }));
      await flush();
      assert.equal(arrival.state, "pending", "an arrival queues: the dependency serves as fast as before once it is back");
      // The dependency is back: the running calls finish at once, and the queue drains.
      for (const r of running) r();
      await flush();
      assert.deepEqual(samples, [], "calls held through the restart are no latency sample");
      assert.equal(bulkhead.stats().inUse, 2);
    });

    it("while the dependency waits out a restart, the queue holds four times maxQueue; back to maxQueue once the calls held through it are done", async () => {
      const { bulkhead, clock } = setup({ maxConcurrent: 2, maxQueue: 3, classifyStall: async () => "restart" });
      await history(bulkhead, clock, 5);
      const running = [await bulkhead.acquire({ deadlineAt: clock.now() + 3_000 }), await bulkhead.acquire({ deadlineAt: clock.now() + 3_000 })];
      clock.advance(100);
      await flush();
      const queued = Array.from({ length: 12 }, () => watch(bulkhead.acquire({ deadlineAt: clock.now() + 2_000 })));
      await flush();
      assert.deepEqual(
        queued.map((q) => q.state),
        Array(12).fill("pending"),
        "a restart's arrivals queue past maxQueue (3), up to 4 x 3",
      );
      const thirteenth = await bulkhead.acquire({ deadlineAt: clock.now() + 2_000 }).catch((e: unknown) => e);
      assertConnectError(thirteenth, Code.Unavailable, /bulkhead full \(2 in use, 12 queued\)/);
      // The dependency is back: the held calls finish, and the queue drains in slot-sized steps.
      for (const r of running) r();
      await flush();
      assert.equal(bulkhead.stats().queued, 10, "the held calls' slots went to the head of the queue");
      for (let i = 0; i < 20 && bulkhead.stats().inUse > 0; i++) {
        clock.advance(50);
        for (const q of queued) if (q.state === "fulfilled") (q.value as Release)();
        await flush();
      }
      assert.equal(bulkhead.stats().queued, 0, "the backlog drained");
      assert.equal(bulkhead.stats().inUse, 0);
      // Nothing is held through a restart any more: a full queue is maxQueue again.
      const after = [await bulkhead.acquire(), await bulkhead.acquire()];
      const waiting = Array.from({ length: 3 }, () => watch(bulkhead.acquire({ deadlineAt: clock.now() + 2_000 })));
      const refused = await bulkhead.acquire({ deadlineAt: clock.now() + 2_000 }).catch((e: unknown) => e);
      assertConnectError(refused, Code.Unavailable, /bulkhead full \(2 in use, 3 queued\)/);
      assert.deepEqual(
        waiting.map((w) => w.state),
        ["pending", "pending", "pending"],
      );
      for (const r of after) r();
    });

    it("after a restart, the calls that waited it out are aged from the last one that finished: draining the backlog is no stall", async () => {
      let kind: "restart" | "stall" = "restart";
      const { bulkhead, clock } = setup({ maxConcurrent: 4, maxQueue: 10, classifyStall: async () => kind });
      await history(bulkhead, clock, 50);
      const held = await Promise.all(Array.from({ length: 4 }, () => bulkhead.acquire({ deadlineAt: clock.now() + 5_000 })));
      await advanceInSteps(clock, 1_500);
      // The restart is over: the dependency no longer says so, and the backlog drains slowly,
      // one held call every 200 ms (less than 10 hold times apart, 500 ms).
      kind = "stall";
      const behind = Array.from({ length: 4 }, () => watch(bulkhead.acquire({ deadlineAt: clock.now() + 2_000 })));
      for (const release of held) {
        await advanceInSteps(clock, 200);
        release();
        await flush();
      }
      assert.deepEqual(
        behind.map((b) => b.state),
        ["fulfilled", "fulfilled", "fulfilled", "fulfilled"],
        "the calls queued behind the backlog were served, not shed as behind a stall",
      );
      assert.equal(bulkhead.stats().rejected, 0);
    });

    it("when the dependency says its calls are stalled, the queue is shed as without a classifier", async () => {
      const { bulkhead, clock } = setup({ maxConcurrent: 1, maxQueue: 10, classifyStall: async () => "stall" });
      await history(bulkhead, clock, 5);
      await bulkhead.acquire({ deadlineAt: clock.now() + 2_000 });
      const queued = Array.from({ length: 3 }, () => watch(bulkhead.acquire({ deadlineAt: clock.now() + 2_000 })));
      await advanceInSteps(clock, 200);
      assert.deepEqual(
        queued.map((q) => q.state),
        ["rejected", "rejected", "rejected"],
      );
      const arrival = await bulkhead.acquire({ deadlineAt: clock.now() + 1_000 }).catch((e: unknown) => e);
      assertConnectError(arrival, Code.Unavailable, /expected wait for a slot/);
    });

    it("a stall's timed-out calls do not teach the mean hold time: a second stall soon after the first is noticed as soon", async () => {
      const { bulkhead, clock } = setup({ maxConcurrent: 2, maxQueue: 10 });
      await history(bulkhead, clock, 10);
      // The first stall: both slots held until their deadlines, 3 s.
      const first = [await bulkhead.acquire(), await bulkhead.acquire()];
      clock.advance(3_000);
      for (const release of first) release("dropped");
      // One call served normally in between, then the second stall.
      await history(bulkhead, clock, 10, 1);
      await bulkhead.acquire({ deadlineAt: clock.now() + 5_000 });
      await bulkhead.acquire({ deadlineAt: clock.now() + 5_000 });
      const queued = Array.from({ length: 3 }, () => watch(bulkhead.acquire({ deadlineAt: clock.now() + 5_000 })));
      await flush();
      assert.deepEqual(
        queued.map((q) => q.state),
        ["pending", "pending", "pending"],
      );
      // Ten usual hold times (100 ms) of silence, and a watch's look after it.
      await advanceInSteps(clock, 200);
      assert.deepEqual(
        queued.map((q) => q.state),
        ["rejected", "rejected", "rejected"],
        "shed at 200 ms, not left to wait out their 5 s",
      );
    });

    it("old running calls while others still finish well are a backlog, not a stall: the wait is estimated from service times, not the running calls' deadlines", async () => {
      const { bulkhead, clock } = setup({ maxConcurrent: 2, maxQueue: 10 });
      await history(bulkhead, clock, 10);
      const old = await bulkhead.acquire({ deadlineAt: clock.now() + 5_000 });
      for (let i = 0; i < 30; i++) {
        const served = await bulkhead.acquire();
        clock.advance(20);
        served();
      }
      await bulkhead.acquire();
      // Service time: the hold times, since calls finish. Position 1 of 2 fits 2 s; behind a stall it would be 4.4 s.
      const behind = watch(bulkhead.acquire({ deadlineAt: clock.now() + 2_000 }));
      await flush();
      assert.equal(behind.state, "pending");
      assert.equal(bulkhead.stats().rejected, 0);
      old();
    });

    it("a backlog that finishes well after a restart it only hears of in the answers is served at its hold times, not at its oldest call's age", async () => {
      // No classifier (as at a hop that never asked): every slot has been held 2 s through a
      // restart further down, and now the held calls come back, 20 ms apart, saying so.
      const { bulkhead, clock } = setup({ maxConcurrent: 4, maxQueue: 10 });
      await history(bulkhead, clock, 20);
      const held: Release[] = [];
      for (let i = 0; i < 4; i++) held.push(await bulkhead.acquire({ deadlineAt: clock.now() + 3_000 }));
      clock.advance(2_000);
      held.shift()!("restart");
      clock.advance(20);
      const arrival = watch(bulkhead.acquire({ deadlineAt: clock.now() + 2_500 }));
      await flush();
      assert.equal(arrival.state, "fulfilled", "the slot the backlog freed is taken at once");
      const queued = watch(bulkhead.acquire({ deadlineAt: clock.now() + 1_000 }));
      await flush();
      assert.equal(queued.state, "pending", "queued behind calls that finish: not refused for the oldest's 2 s age");
      assert.equal(bulkhead.stats().serviceMs, 20, "the hold times of calls served normally");
      assert.equal(bulkhead.stats().rejected, 0);
      // Nothing finishes for 150 ms more: the running calls' silence is the service time.
      clock.advance(150);
      assert.equal(bulkhead.stats().serviceMs, 170);
      for (const release of held) release("restart");
      await flush();
      assert.equal(queued.state, "fulfilled");
      queued.value!();
      arrival.value!();
    });

    it("one slow call among running ones that move is the tail of a busy dependency, not a stall: the wait is still estimated from service times", async () => {
      const { bulkhead, clock } = setup({ maxConcurrent: 4, maxQueue: 4 });
      await history(bulkhead, clock, 10);
      await bulkhead.acquire({ deadlineAt: clock.now() + 3_000 });
      clock.advance(590);
      for (let i = 0; i < 3; i++) await bulkhead.acquire({ deadlineAt: clock.now() + 3_000 });
      clock.advance(10); // one has run 600 ms (60 x the usual), three 10 ms
      // Service time 600 ms (the oldest's age), position 1 of limit 4; not "until the deadlines pass".
      assert.equal(bulkhead.expectedWaitMs(1), 150);
      void bulkhead.acquire({ deadlineAt: clock.now() + 1_000 }).catch(() => {});
      assert.equal(bulkhead.stats().queued, 1, "queued: 150 ms to wait + 600 ms to run fit the 1000 ms left");
    });

    it("gives a full bulkhead's refusal the wait the next position would have, plus a service time", async () => {
      const { bulkhead, clock } = setup({ maxConcurrent: 2, maxQueue: 1 });
      await history(bulkhead, clock, 40);
      await bulkhead.acquire();
      await bulkhead.acquire();
      void bulkhead.acquire();
      const err = await bulkhead.acquire().catch((e: unknown) => e);
      assertConnectError(err, Code.Unavailable, /bulkhead full/);
      assert.equal(localRejection(err)?.retryAfterMs, 80); // 40 x 2 / 2 + 40
    });
  });

  describe("with a limiter", () => {
    class ManualLimit implements ConcurrencyLimiter {
      samples: { durationMs: number; inFlight: number; dropped?: boolean }[] = [];
      constructor(public value: number) {}
      limit() {
        return this.value;
      }
      onSample(s: { durationMs: number; inFlight: number; dropped?: boolean }) {
        this.samples.push(s);
      }
    }

    it("takes its concurrency from the limiter at every decision", async () => {
      const clock = new FakeScheduler();
      const limiter = new ManualLimit(2);
      const bulkhead = new Bulkhead({ name: "stock", limiter, maxQueue: 10, clock, scheduler: clock });
      const r1 = await bulkhead.acquire();
      const r2 = await bulkhead.acquire();
      const third = watch(bulkhead.acquire());
      await flush();
      assert.equal(third.state, "pending");
      assert.equal(bulkhead.stats().maxConcurrent, 2);
      // Shrinks: running calls keep their slots; a freed slot is not handed on.
      limiter.value = 1;
      r1();
      await flush();
      assert.equal(third.state, "pending");
      assert.equal(bulkhead.stats().inUse, 1);
      // Grows again: the next release hands out every slot the limit allows.
      limiter.value = 3;
      const fourth = watch(bulkhead.acquire());
      r2();
      await flush();
      assert.equal(third.state, "fulfilled");
      assert.equal(fourth.state, "fulfilled");
      assert.equal(bulkhead.stats().inUse, 2);
    });

    it("feeds it each call's hold time and in-flight count: successes and timeouts, not ignored outcomes", async () => {
      const clock = new FakeScheduler();
      const limiter = new ManualLimit(4);
      const bulkhead = new Bulkhead({ name: "stock", limiter, maxQueue: 0, clock, scheduler: clock });
      const a = await bulkhead.acquire();
      const b = await bulkhead.acquire();
      const c = await bulkhead.acquire();
      clock.advance(10);
      a("ok");
      clock.advance(10);
      b("dropped");
      c("ignored");
      await bulkhead.run(async () => clock.advance(7));
      await bulkhead.run(async () => Promise.reject(new Error("refused below"))).catch(() => {});
      assert.deepEqual(limiter.samples, [
        { durationMs: 10, inFlight: 3, dropped: false },
        { durationMs: 20, inFlight: 2, dropped: true },
        { durationMs: 7, inFlight: 1, dropped: false },
      ]);
    });

    it("with an AdaptiveLimit: slow calls shrink the slots a dependency gets, fast ones give them back", async () => {
      const clock = new FakeScheduler();
      const limiter = new AdaptiveLimit({ minLimit: 2, maxLimit: 16, initialLimit: 8, clock, windowMs: 10, minWindowSamples: 4 });
      const bulkhead = new Bulkhead({ name: "stock", limiter, maxQueue: 0, clock, scheduler: clock });
      /** `n` rounds of the limit's worth of concurrent calls that each take `ms`. */
      async function rounds(n: number, ms: number) {
        for (let i = 0; i < n; i++) {
          const held: Release[] = [];
          for (let k = 0; k < bulkhead.limit(); k++) held.push(await bulkhead.acquire());
          clock.advance(ms);
          for (const r of held) r("ok");
        }
      }
      await rounds(40, 5);
      const healthy = bulkhead.limit();
      assert.ok(healthy >= 8);
      await rounds(20, 200);
      assert.equal(bulkhead.limit(), 2, "slow: down to the minimum");
      const held = [await bulkhead.acquire(), await bulkhead.acquire()];
      await assert.rejects(bulkhead.acquire(), /bulkhead full \(2 in use, 0 queued\)/);
      for (const r of held) r("ok");
      await rounds(100, 5);
      assert.ok(bulkhead.limit() >= healthy, `recovered: ${bulkhead.limit()} >= ${healthy}`);
    });
  });

  it("refuses nonsensical limits", () => {
    const clock = new FakeScheduler();
    assert.throws(() => new Bulkhead({ name: "x", maxConcurrent: 0, maxQueue: 1, clock }), RangeError);
    assert.throws(() => new Bulkhead({ name: "x", maxConcurrent: 1.5, maxQueue: 1, clock }), RangeError);
    assert.throws(() => new Bulkhead({ name: "x", maxConcurrent: 1, maxQueue: -1, clock }), RangeError);
    assert.throws(() => new Bulkhead({ name: "x", maxQueue: 1, clock }), RangeError, "neither a fixed limit nor a limiter");
  });
});
