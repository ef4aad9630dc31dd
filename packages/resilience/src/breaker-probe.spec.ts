import assert from "node:assert/strict";
import { describe, it, type TestContext } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import { BreakerProbe } from "./breaker-probe.js";
import { CircuitBreaker } from "./circuit-breaker.js";
import { FakeScheduler } from "./scheduler.js";

/**
 * Two breakers of one dependency on a fake clock, watched by one probe
 * whose check answers `serving`. opossum's reset timer is a real
 * setTimeout: node:test's mock timers hold it (no test here reaches it).
 */
function setup(t: TestContext) {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const time = new FakeScheduler();
  const state = { serving: false, checks: 0 };
  const make = (name: string) => new CircuitBreaker({ name, clock: time, firstResetTimeout: 5_000, resetTimeout: 30_000 });
  const a = make("pricing.GetPrices");
  const b = make("pricing.ListProducts");
  t.after(() => {
    a.dispose();
    b.dispose();
  });
  const probe = new BreakerProbe({
    scheduler: time,
    random: () => 0.5,
    check: async () => {
      state.checks++;
      return state.serving;
    },
  });
  t.after(() => probe.stop());
  probe.watch(a);
  probe.watch(b);
  const open = async (breaker: CircuitBreaker) => {
    for (let i = 0; i < 10; i++) await breaker.execute(() => Promise.reject(new ConnectError("down", Code.Unavailable))).catch(() => {});
    assert.equal(breaker.state(), "open");
  };
  const advance = async (ms: number) => {
    for (let t = 0; t < ms; t += 10) {
      time.advance(10);
      await new Promise((r) => setImmediate(r));
    }
  };
  return { a, b, state, open, advance };
}

describe("BreakerProbe", () => {
  it("checks nothing while every breaker is closed", async (t) => {
    const { state, advance } = setup(t);
    await advance(2_000);
    assert.equal(state.checks, 0);
  });

  it("while a breaker is open, checks about every 150 ms; the first check that succeeds closes every open breaker; then it stops", async (t) => {
    const { a, b, state, open, advance } = setup(t);
    await open(a);
    await open(b);
    await advance(1_500);
    assert.ok(state.checks >= 9 && state.checks <= 10, `one check at a time for both breakers: ${state.checks} in 1.5 s`);
    assert.equal(a.state(), "open");
    state.serving = true;
    await advance(200);
    assert.equal(a.state(), "closed");
    assert.equal(b.state(), "closed");
    const checks = state.checks;
    await advance(2_000);
    assert.equal(state.checks, checks, "no checks once nothing is open");
  });

  it("a check that throws counts as not serving", async (t) => {
    const time = new FakeScheduler();
    t.mock.timers.enable({ apis: ["setTimeout"] });
    const breaker = new CircuitBreaker({ name: "orders.CreateOrder", clock: time });
    t.after(() => breaker.dispose());
    let checks = 0;
    const probe = new BreakerProbe({
      scheduler: time,
      check: async () => {
        checks++;
        throw new Error("connection refused");
      },
    });
    t.after(() => probe.stop());
    probe.watch(breaker);
    for (let i = 0; i < 10; i++) await breaker.execute(() => Promise.reject(new ConnectError("down", Code.Unavailable))).catch(() => {});
    for (let i = 0; i < 100; i++) {
      time.advance(10);
      await new Promise((r) => setImmediate(r));
    }
    assert.ok(checks >= 4, `checks: ${checks}`);
    assert.equal(breaker.state(), "open");
  });
});
