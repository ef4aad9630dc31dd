import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ConnectionSlots, SlotWaitError } from "./connection-slots.js";

const never = new AbortController().signal;

describe("ConnectionSlots", () => {
  it("grants up to its size, then queues in order", async () => {
    const slots = new ConnectionSlots(1);
    await slots.acquire(never, 0);
    const order: number[] = [];
    const a = slots.acquire(never, 10_000).then(() => order.push(1));
    const b = slots.acquire(never, 10_000).then(() => order.push(2));
    assert.equal(slots.waiting, 2);
    slots.release();
    await a;
    slots.release();
    await b;
    assert.deepEqual(order, [1, 2]);
    assert.equal(slots.waiting, 0);
  });

  it("times out and leaves the queue", async () => {
    const slots = new ConnectionSlots(1);
    await slots.acquire(never, 0);
    await assert.rejects(slots.acquire(never, 10), (e: unknown) => e instanceof SlotWaitError && e.reason === "timeout");
    assert.equal(slots.waiting, 0);
    slots.release();
    await slots.acquire(never, 0); // the slot was handed back, not to the ghost
  });

  it("stops waiting when the signal aborts", async () => {
    const slots = new ConnectionSlots(1);
    await slots.acquire(never, 0);
    const ac = new AbortController();
    const waiting = slots.acquire(ac.signal, 10_000);
    ac.abort();
    await assert.rejects(waiting, (e: unknown) => e instanceof SlotWaitError && e.reason === "aborted");
    assert.equal(slots.waiting, 0);
  });

  it("still grants a free slot with no time to wait", async () => {
    await new ConnectionSlots(1).acquire(never, 0);
  });
});
