import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type pg from "pg";
import { acquireConnection } from "./acquire-connection.js";
import { ConnectionSlots, SlotWaitError } from "./connection-slots.js";
import { ReconnectGate } from "./reconnect-gate.js";

/** A pool whose connect() settles only when the test says so (a hung connect). */
function hangingPool() {
  let settle!: { resolve(c: pg.PoolClient): void; reject(e: Error): void };
  let released = 0;
  const client = { release: () => void released++ } as unknown as pg.PoolClient;
  const pool = {
    connect: () => new Promise<pg.PoolClient>((resolve, reject) => (settle = { resolve, reject })),
  } as unknown as pg.Pool;
  return { pool, arrive: () => settle.resolve(client), fail: () => settle.reject(new Error("ECONNREFUSED")), released: () => released };
}

describe("acquireConnection", () => {
  it("gives up on a hung connect at the budget, then returns the late connection and its slot", async () => {
    const { pool, arrive, released } = hangingPool();
    const slots = new ConnectionSlots(1);
    await assert.rejects(
      acquireConnection(pool, slots, new AbortController().signal, 20),
      (e: unknown) => e instanceof SlotWaitError && e.reason === "timeout",
    );
    // The slot stays taken while the connect is outstanding: the pool must not grow past its size.
    await assert.rejects(slots.acquire(new AbortController().signal, 0), SlotWaitError);
    arrive();
    await new Promise((r) => setImmediate(r));
    assert.equal(released(), 1);
    await slots.acquire(new AbortController().signal, 0);
  });

  it("gives up when the caller goes away, and frees the slot when the connect fails later", async () => {
    const { pool, fail } = hangingPool();
    const slots = new ConnectionSlots(1);
    const ac = new AbortController();
    const pending = acquireConnection(pool, slots, ac.signal, 10_000);
    ac.abort();
    await assert.rejects(pending, (e: unknown) => e instanceof SlotWaitError && e.reason === "aborted");
    fail();
    await new Promise((r) => setImmediate(r));
    await slots.acquire(new AbortController().signal, 0);
  });

  it("frees the slot and rethrows when connecting fails in time", async () => {
    const { pool, fail } = hangingPool();
    const slots = new ConnectionSlots(1);
    const pending = acquireConnection(pool, slots, new AbortController().signal, 10_000);
    await new Promise((r) => setImmediate(r)); // let it take the slot and call connect()
    fail();
    await assert.rejects(pending, /ECONNREFUSED/);
    await slots.acquire(new AbortController().signal, 0);
  });

  it("behind a gate that is down, the wait for a slot is parked too, until the slot is there", async () => {
    const { pool, arrive } = hangingPool();
    const slots = new ConnectionSlots(1);
    let serverUp!: () => void;
    const gate = new ReconnectGate({ probe: () => new Promise<void>((resolve) => (serverUp = resolve)) });
    gate.reportRefused(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }));
    assert.equal(gate.down, true);
    const parked = new Set<string>();
    const park = (who: string) => () => {
      parked.add(who);
      return () => parked.delete(who);
    };
    const signal = new AbortController().signal;
    // The first holds the only slot and waits at the gate; the second waits for the slot.
    const first = acquireConnection(pool, slots, signal, 10_000, gate, park("first"));
    const second = acquireConnection(pool, slots, signal, 10_000, gate, park("second"));
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual([...parked].sort(), ["first", "second"], "both wait out the restart, neither counts in admission");
    serverUp();
    await new Promise((r) => setTimeout(r, 10));
    arrive();
    const client = await first;
    assert.deepEqual([...parked], ["second"], "the second waits on in the restart's backlog");
    client.release();
    slots.release();
    await new Promise((r) => setImmediate(r));
    assert.deepEqual([...parked], [], "back at work once it has its slot");
    arrive();
    (await second).release();
    gate.close();
  });
});
