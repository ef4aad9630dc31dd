import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FakeScheduler } from "./scheduler.js";
import { type LeaveReason, WaitQueue } from "./wait-queue.js";

/** Every entry resolves: with its grant ("granted:<waited>") or with why it left ("<reason>:<waited>"). */
function setup(maxLength?: number) {
  const time = new FakeScheduler(1000);
  const queue = new WaitQueue<string>({ clock: time, scheduler: time, ...(maxLength === undefined ? {} : { maxLength }) });
  const wait = (opts: { deadlineAt?: number; signal?: AbortSignal } = {}) =>
    queue.enqueue({ ...opts, leave: (reason: LeaveReason, waitedMs: number) => ({ value: `${reason}:${waitedMs}` }) });
  const grant = () => queue.grantNext((waitedMs) => `granted:${waitedMs}`);
  return { time, queue, wait, grant };
}

describe("WaitQueue", () => {
  it("grants in FIFO order, with each entry's wait", async () => {
    const { time, queue, wait, grant } = setup();
    const a = wait().promise;
    time.advance(5);
    const b = wait().promise;
    const c = wait().promise;
    assert.equal(queue.length, 3);
    time.advance(10);
    assert.equal(grant(), true);
    assert.equal(grant(), true);
    assert.equal(await a, "granted:15");
    assert.equal(await b, "granted:10");
    assert.equal(queue.length, 1);
    assert.equal(grant(), true);
    assert.equal(await c, "granted:10");
    assert.equal(grant(), false, "nobody left to take a slot");
  });

  it("an entry leaves at its deadline, on the scheduler, and its timer is gone", async () => {
    const { time, queue, wait, grant } = setup();
    const a = wait({ deadlineAt: 1020 }).promise;
    const b = wait().promise;
    time.advance(19);
    assert.equal(queue.length, 2);
    time.advance(1);
    assert.equal(await a, "deadline:20");
    assert.equal(queue.length, 1);
    assert.equal(time.pendingTimers(), 0);
    assert.equal(grant(), true);
    assert.equal(await b, "granted:20");
  });

  it("an entry leaves when its signal aborts, and its listener is removed", async () => {
    const { queue, wait } = setup();
    const ac = new AbortController();
    let listeners = 0;
    const signal = ac.signal;
    const add = signal.addEventListener.bind(signal);
    const remove = signal.removeEventListener.bind(signal);
    signal.addEventListener = ((...args: Parameters<typeof add>) => (listeners++, add(...args))) as typeof add;
    signal.removeEventListener = ((...args: Parameters<typeof remove>) => (listeners--, remove(...args))) as typeof remove;
    const a = wait({ signal, deadlineAt: 5000 }).promise;
    assert.equal(listeners, 1);
    ac.abort();
    assert.equal(await a, "aborted:0");
    assert.equal(queue.length, 0);
    assert.equal(listeners, 0);
  });

  it("drops expired and aborted entries at the front instead of granting them (ties with their timers)", async () => {
    const { time, queue } = setup();
    const leaveOrder: string[] = [];
    const granted: string[] = [];
    // A slot frees at 1010, in a timer that fires before the expiring
    // entry's own (same moment, scheduled first).
    time.setTimeout(() => void queue.grantNext((waitedMs, e) => (granted.push(`after ${waitedMs} ms, deadline ${e.deadlineAt}`), "live granted")), 10);
    const entry = (name: string, opts: { deadlineAt?: number; signal?: AbortSignal }) =>
      queue.enqueue({
        ...opts,
        leave: (reason) => {
          leaveOrder.push(`${name}:${reason}`);
          return { value: `${name} left` };
        },
      }).promise;
    // A signal that reads aborted before its abort event has been delivered.
    const racing = { aborted: false, addEventListener() {}, removeEventListener() {} };
    const expired = entry("expired", { deadlineAt: 1010 });
    const aborted = entry("aborted", { signal: racing as unknown as AbortSignal });
    const live = entry("live", { deadlineAt: 2000 });
    racing.aborted = true;
    time.advance(10);
    assert.deepEqual(leaveOrder, ["expired:deadline", "aborted:aborted"]);
    assert.deepEqual(granted, ["after 10 ms, deadline 2000"]);
    assert.equal(await expired, "expired left");
    assert.equal(await aborted, "aborted left");
    assert.equal(await live, "live granted");
    assert.equal(queue.length, 0);
  });

  it("refuses at once, without queueing, an entry already aborted, already expired, or finding the queue full", async () => {
    const { time, queue, wait } = setup(1);
    const ac = new AbortController();
    ac.abort();
    assert.equal(await wait({ signal: ac.signal }).promise, "aborted:0");
    assert.equal(await wait({ deadlineAt: 1000 }).promise, "deadline:0", "a deadline equal to now has passed");
    assert.equal(queue.length, 0);
    const first = wait({ deadlineAt: 1001 }).promise;
    assert.equal(queue.isFull(), true);
    assert.equal(await wait().promise, "full:0");
    assert.equal(queue.length, 1);
    time.advance(1);
    assert.equal(await first, "deadline:1");
    assert.equal(time.pendingTimers(), 0);
  });

  it("settles a leaving entry by rejecting when `leave` gives an error", async () => {
    const time = new FakeScheduler();
    const queue = new WaitQueue<number>({ clock: time, scheduler: time });
    const p = queue.enqueue({ deadlineAt: 5, leave: (reason) => ({ error: new Error(`left: ${reason}`) }) }).promise;
    time.advance(5);
    await assert.rejects(p, /left: deadline/);
  });

  it("evicts the newest entry, and withdraws a given one, exactly once", async () => {
    const { time, queue, wait, grant } = setup();
    const a = wait({ deadlineAt: 5000 });
    const b = wait({ deadlineAt: 5000 });
    const c = wait({ deadlineAt: 5000 });
    time.advance(3);
    assert.equal(
      queue.evictNewest((w) => ({ value: `evicted:${w}` })),
      true,
    );
    assert.equal(await c.promise, "evicted:3");
    assert.equal(
      a.ticket.withdraw((w) => ({ value: `withdrawn:${w}` })),
      true,
    );
    assert.equal(await a.promise, "withdrawn:3");
    assert.equal(
      a.ticket.withdraw(() => ({ value: "again" })),
      false,
      "a settled entry cannot be withdrawn again",
    );
    assert.equal(
      c.ticket.withdraw(() => ({ value: "again" })),
      false,
    );
    assert.equal(time.pendingTimers(), 1, "only b's timer is left");
    assert.equal(grant(), true);
    assert.equal(await b.promise, "granted:3");
    assert.equal(
      b.ticket.withdraw(() => ({ value: "late" })),
      false,
      "a granted entry cannot be withdrawn",
    );
    assert.equal(
      queue.evictNewest(() => ({ value: "x" })),
      false,
    );
  });

  it("unlinks from the middle in O(1) and keeps the order of the rest", async () => {
    const { queue, wait, grant } = setup();
    const acs = [0, 1, 2, 3, 4].map(() => new AbortController());
    const ps = acs.map((ac) => wait({ signal: ac.signal }).promise);
    acs[1]!.abort();
    acs[3]!.abort();
    assert.equal(queue.length, 3);
    const order: number[] = [];
    ps.forEach((p, i) => void p.then((v) => v.startsWith("granted") && order.push(i)));
    while (grant());
    await Promise.all(ps);
    assert.deepEqual(order, [0, 2, 4]);
    assert.equal(queue.length, 0);
  });

  it("refuses a nonsensical bound", () => {
    const time = new FakeScheduler();
    assert.throws(() => new WaitQueue({ clock: time, scheduler: time, maxLength: -1 }), /maxLength must be an integer >= 0, got -1/);
    assert.throws(() => new WaitQueue({ clock: time, scheduler: time, maxLength: 1.5 }), RangeError);
  });
});
