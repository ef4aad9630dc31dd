import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FakeScheduler } from "@platform/resilience";
import { ReconnectGate, ReconnectWaitError } from "./reconnect-gate.js";

/** A gate on a fake clock whose probes succeed once `serverUp` is true; `random` 1 makes each delay its cap. */
function gateOnFakeTime() {
  const time = new FakeScheduler();
  const state = { serverUp: false, probes: 0, changes: [] as string[] };
  const gate = new ReconnectGate({
    clock: time,
    scheduler: time,
    random: () => 1,
    backoff: { initialMs: 25, multiplier: 2, maxMs: 200 },
    probe: async () => {
      state.probes++;
      if (!state.serverUp) throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
    },
    onChange: (c) => state.changes.push(c.down ? "down" : `up after ${c.downMs} ms, ${c.probes} probes`),
  });
  return { time, state, gate };
}

/** Lets the probes' promise callbacks run, then advances fake time. */
async function advance(time: FakeScheduler, ms: number, step = 5): Promise<void> {
  for (let t = 0; t < ms; t += step) {
    time.advance(step);
    await new Promise((r) => setImmediate(r));
  }
}

describe("ReconnectGate", () => {
  it("lets checkouts through at once while the server accepts connections", async () => {
    const { gate, state } = gateOnFakeTime();
    assert.equal(gate.down, false);
    await gate.wait(new AbortController().signal, 0);
    assert.equal(state.probes, 0);
  });

  it("holds waiters while the server refuses, probing with backoff, and releases them all when a probe connects", async () => {
    const { gate, state, time } = gateOnFakeTime();
    gate.reportRefused(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }));
    const outcomes: string[] = [];
    const waits = Array.from({ length: 50 }, (_, i) =>
      gate.wait(new AbortController().signal, 3000).then(
        () => outcomes.push(`ok ${i}`),
        (e: unknown) => outcomes.push(String(e)),
      ),
    );
    assert.equal(gate.waiting, 50);
    // 1 s down: probes at 25, 50, 100, 200, 200... ms apart, however many wait.
    await advance(time, 1000);
    assert.equal(outcomes.length, 0, "nobody was let through while the server refused");
    assert.ok(state.probes >= 5 && state.probes <= 8, `probes in 1 s: ${state.probes}`);
    state.serverUp = true;
    await advance(time, 200);
    await Promise.all(waits);
    assert.equal(outcomes.length, 50);
    assert.ok(
      outcomes.every((o) => o.startsWith("ok")),
      outcomes.join(", "),
    );
    assert.equal(gate.down, false);
    assert.equal(state.changes[0], "down");
    assert.match(state.changes[1]!, /^up after \d+ ms, \d+ probes$/);
    // Up again: no further probes.
    const probes = state.probes;
    await advance(time, 1000);
    assert.equal(state.probes, probes);
  });

  it("a waiter leaves at its own deadline, with the refusal that put the gate down", async () => {
    const { gate, time } = gateOnFakeTime();
    const refusal = Object.assign(new Error("the database system is starting up"), { code: "57P03" });
    gate.reportRefused(refusal);
    const short = gate.wait(new AbortController().signal, 300).catch((e: unknown) => e);
    const long = gate.wait(new AbortController().signal, 3000).catch((e: unknown) => e);
    await advance(time, 310);
    const err = await short;
    assert.ok(err instanceof ReconnectWaitError);
    assert.equal(err.reason, "timeout");
    assert.equal(err.waitedMs, 300);
    assert.equal(gate.waiting, 1, "the other waiter still waits");
    gate.reportConnected();
    assert.equal(await long, undefined);
  });

  it("a waiter whose caller leaves goes at once", async () => {
    const { gate } = gateOnFakeTime();
    gate.reportRefused(new Error("Connection terminated unexpectedly"));
    const caller = new AbortController();
    const wait = gate.wait(caller.signal, 3000).catch((e: unknown) => e);
    caller.abort("cancelled");
    const err = await wait;
    assert.ok(err instanceof ReconnectWaitError);
    assert.equal(err.reason, "aborted");
    assert.equal(gate.waiting, 0);
  });

  it("any successful connection lifts the gate, and close() stops probing", async () => {
    const { gate, state, time } = gateOnFakeTime();
    gate.reportRefused(new Error("refused"));
    await advance(time, 100);
    gate.reportConnected();
    assert.equal(gate.down, false);
    gate.reportRefused(new Error("refused"));
    gate.close();
    const probes = state.probes;
    await advance(time, 1000);
    assert.equal(state.probes, probes);
  });
});
