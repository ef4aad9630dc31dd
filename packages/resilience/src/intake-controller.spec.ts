import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FakeClock } from "./clock.js";
import { type IntakeControllerOptions, type IntakeTransition, IntakeController } from "./intake-controller.js";
import { seededRandom } from "./seeded-random.js";

function setup(overrides: Partial<IntakeControllerOptions> = {}) {
  const clock = new FakeClock(50_000);
  const transitions: IntakeTransition[] = [];
  let draws = 0;
  const random = seededRandom(11);
  const ctl = new IntakeController({
    clock,
    random: () => (draws++, random()),
    onTransition: (t) => transitions.push(t),
    ...overrides,
  });
  const fail = (n: number, latencyMs = 10) => {
    for (let i = 0; i < n; i++) ctl.record(false, latencyMs);
  };
  const ok = (n: number, latencyMs = 10) => {
    for (let i = 0; i < n; i++) ctl.record(true, latencyMs);
  };
  return { clock, ctl, transitions, fail, ok, draws: () => draws };
}

const state = (ctl: IntakeController) => {
  const s = ctl.snapshot();
  return [s.state, s.admitFraction] as const;
};

/** Admits `n` requests arriving `perSec` a second; returns how many of the last `counted` were let in. */
function arrive(t: ReturnType<typeof setup>, n: number, perSec: number, counted = n): number {
  let admitted = 0;
  for (let i = 0; i < n; i++) {
    if (t.ctl.admit() && i >= n - counted) admitted++;
    t.clock.advance(1000 / perSec);
  }
  return admitted;
}

describe("IntakeController", () => {
  it("admits everything in normal operation without drawing random numbers", () => {
    const { ctl, ok, draws } = setup();
    ok(100);
    for (let i = 0; i < 1_000; i++) assert.equal(ctl.admit(), true);
    assert.equal(draws(), 0);
    assert.deepEqual(state(ctl), ["normal", 1]);
  });

  it("does not judge health below the minimum volume", () => {
    const { ctl, fail } = setup();
    fail(19);
    assert.deepEqual(state(ctl), ["normal", 1]);
  });

  it("judges health over a sliding window, not since the start of time", () => {
    const { ctl, clock, fail, ok } = setup();
    ok(15);
    fail(15); // 50% over 30 calls: not below 50%
    clock.advance(10_000);
    fail(15); // the old outcomes have left the window: 15 calls is below minVolume
    assert.deepEqual(state(ctl), ["normal", 1]);
  });

  it("cuts intake when the success rate drops below the threshold with enough volume", () => {
    const { ctl, ok, fail, transitions, clock } = setup();
    ok(10);
    fail(10);
    assert.deepEqual(state(ctl), ["normal", 1], "50% is not below 50%");
    fail(1);
    // Cut to the share still served (10 of 21), the safe rate: not below it.
    const served = ctl.snapshot().admitFraction;
    assert.ok(Math.abs(served - 10 / 21) < 0.01, `cut to ${served}`);
    assert.deepEqual(state(ctl), ["cut", served]);
    assert.deepEqual(transitions, [{ from: "normal", to: "cut", admitFraction: served, reason: "success_rate", at: clock.now() }]);
  });

  it("cuts intake when mean latency passes the threshold, if configured", () => {
    const { ctl, ok } = setup({ maxMeanLatencyMs: 500 });
    ok(19, 800);
    assert.deepEqual(state(ctl), ["normal", 1]);
    ok(1, 800);
    assert.deepEqual(state(ctl), ["cut", 0.2]);
    assert.equal(ctl.snapshot().state, "cut");
  });

  it("never cuts below cutFraction, however little was served", () => {
    const { ctl, fail } = setup();
    fail(20);
    assert.deepEqual(state(ctl), ["cut", 0.2]);
  });

  it("admits about the cut fraction, using the injected random", () => {
    const { ctl, fail } = setup();
    fail(20);
    let admitted = 0;
    for (let i = 0; i < 10_000; i++) if (ctl.admit()) admitted++;
    assert.ok(Math.abs(admitted - 2_000) < 150, `admitted ${admitted}`);
  });

  it("admits exactly where random() falls below the fraction", () => {
    let next = 0;
    const { ctl, fail } = setup({ random: () => next });
    fail(20);
    next = 0.19;
    assert.equal(ctl.admit(), true);
    next = 0.2;
    assert.equal(ctl.admit(), false);
  });

  it("readmits 10% of full traffic per healthy step interval until back to normal", () => {
    const { ctl, clock, fail, ok, transitions } = setup();
    fail(20);
    const fractions: number[] = [];
    for (let step = 0; step < 8; step++) {
      clock.advance(2_999);
      ok(30);
      assert.equal(ctl.snapshot().admitFraction, fractions.at(-1) ?? 0.2, "no step before a full interval");
      clock.advance(1);
      fractions.push(ctl.snapshot().admitFraction);
    }
    assert.deepEqual(fractions, [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1]);
    assert.deepEqual(state(ctl), ["normal", 1]);
    assert.deepEqual(
      transitions.map((t) => `${t.to}:${t.admitFraction}`),
      ["cut:0.2", "recovering:0.3", "recovering:0.4", "recovering:0.5", "recovering:0.6", "recovering:0.7", "recovering:0.8", "recovering:0.9", "normal:1"],
    );
  });

  it("takes one step per evaluation, even after a long quiet period", () => {
    const { ctl, clock, fail } = setup();
    fail(20);
    clock.advance(60_000);
    assert.deepEqual(state(ctl), ["recovering", 0.3]);
  });

  it("halves the fraction when health degrades again while recovering, and restarts the interval", () => {
    const { ctl, clock, fail, ok } = setup();
    fail(20);
    for (let i = 0; i < 3; i++) {
      clock.advance(3_000);
      ok(5);
    }
    assert.deepEqual(state(ctl), ["recovering", 0.5]);
    clock.advance(1_000);
    fail(20);
    assert.deepEqual(state(ctl), ["cut", 0.25]);
    clock.advance(2_999);
    assert.deepEqual(state(ctl), ["cut", 0.25]);
    clock.advance(1);
    assert.deepEqual(state(ctl), ["recovering", 0.35]);
  });

  it("keeps halving while the trouble persists, but never below the floor", () => {
    const { ctl, clock, fail } = setup();
    fail(20);
    clock.advance(100);
    fail(20);
    assert.deepEqual(state(ctl), ["cut", 0.1]);
    clock.advance(100);
    fail(20);
    assert.deepEqual(state(ctl), ["cut", 0.05]);
    clock.advance(100);
    fail(20);
    assert.deepEqual(state(ctl), ["cut", 0.05]);
  });

  it("ignores outcomes of requests that started before the last change", () => {
    const { ctl, clock, fail } = setup();
    fail(20);
    clock.advance(1_000);
    // The overload's tail: requests admitted before the cut, finishing now.
    fail(100, 1_500);
    assert.deepEqual(state(ctl), ["cut", 0.2]);
    assert.equal(ctl.snapshot().window.calls, 0);
    fail(20, 500);
    assert.deepEqual(state(ctl), ["cut", 0.1]);
  });

  describe("manual override", () => {
    it("fixes the fraction; outcomes and time do not move it", () => {
      const { ctl, clock, fail } = setup();
      ctl.setManual(0.1);
      assert.deepEqual(state(ctl), ["manual", 0.1]);
      fail(100);
      clock.advance(60_000);
      assert.deepEqual(state(ctl), ["manual", 0.1]);
    });

    it("released below 100% resumes gradual recovery from that fraction", () => {
      const { ctl, clock, transitions } = setup();
      ctl.setManual(0.1);
      ctl.setManual(null);
      assert.deepEqual(state(ctl), ["recovering", 0.1]);
      clock.advance(3_000);
      assert.deepEqual(state(ctl), ["recovering", 0.2]);
      assert.deepEqual(
        transitions.map((t) => t.reason),
        ["manual", "manual_released", "step_up"],
      );
    });

    it("released at 100% returns to normal", () => {
      const { ctl } = setup();
      ctl.setManual(1);
      ctl.setManual(null);
      assert.deepEqual(state(ctl), ["normal", 1]);
    });

    it("at 0 admits nothing, without drawing random numbers", () => {
      const { ctl, draws } = setup();
      ctl.setManual(0);
      for (let i = 0; i < 10; i++) assert.equal(ctl.admit(), false);
      assert.equal(draws(), 0);
    });

    it("release is a no-op when not in manual", () => {
      const { ctl, transitions } = setup();
      ctl.setManual(null);
      assert.deepEqual(state(ctl), ["normal", 1]);
      assert.equal(transitions.length, 0);
    });

    it("refuses a fraction outside [0, 1]", () => {
      const { ctl } = setup();
      assert.throws(() => ctl.setManual(1.5), RangeError);
      assert.throws(() => ctl.setManual(-0.1), RangeError);
      assert.throws(() => ctl.setManual(Number.NaN), RangeError);
    });
  });

  it("refuses nonsensical settings", () => {
    const clock = new FakeClock();
    assert.throws(() => new IntakeController({ clock, cutFraction: 2 }), RangeError);
    assert.throws(() => new IntakeController({ clock, stepFraction: 0 }), RangeError);
    assert.throws(() => new IntakeController({ clock, stepIntervalMs: 0 }), RangeError);
    assert.throws(() => new IntakeController({ clock, minVolume: 0 }), RangeError);
    assert.throws(() => new IntakeController({ clock, cutFraction: 0.1, minFraction: 0.2 }), RangeError);
  });

  describe("a fraction is also a rate while cut", () => {
    /** 40 successes, then failures until the cut (at 40 of 81 served), all within the rate window: 20 req/s still served (2 s window). */
    const cutFraction = 40 / 81;
    function cutAt20PerSec(quietMs = 2_100) {
      const t = setup();
      t.ok(40);
      t.fail(41);
      assert.equal(t.ctl.snapshot().state, "cut");
      assert.ok(Math.abs(t.ctl.snapshot().admitFraction - cutFraction) < 1e-6);
      assert.equal(t.ctl.snapshot().servedRatePerSec, 20);
      t.clock.advance(quietMs); // the first step comes at 3 s
      return t;
    }

    it("admits every request while fewer arrive than the rate still served at the cut", () => {
      const t = cutAt20PerSec();
      assert.equal(arrive(t, 5, 10), 5);
      assert.ok(Math.abs(t.ctl.snapshot().admitFraction - cutFraction) < 1e-6, "the fraction itself is unchanged");
    });

    it("admits only its fraction when far more arrive than that rate", () => {
      const t = cutAt20PerSec(0);
      // 200/s for 2.8 s, counted once the 2 s rate window is full: 20/s is 10%, below the 49% fraction.
      const admitted = arrive(t, 560, 200, 160);
      assert.ok(admitted >= 55 && admitted <= 105, `admitted ${admitted} of 160 at a 49% fraction`);
    });

    it("scales the rate with each step up, measures it again at each cut, and forgets it in normal and manual operation", () => {
      const t = cutAt20PerSec();
      t.clock.advance(900); // 3 s since the cut
      t.ctl.admit();
      const stepped = t.ctl.snapshot();
      assert.equal(stepped.state, "recovering");
      assert.ok(Math.abs((stepped.servedRatePerSec ?? 0) - (20 * stepped.admitFraction) / cutFraction) < 1e-6, "the rate grows with the fraction");
      t.clock.advance(50); // outcomes of requests started after the step count
      t.ok(6); // 6 served in the last 2 s...
      t.fail(20); // ...and renewed trouble
      const halved = t.ctl.snapshot();
      assert.equal(halved.state, "cut");
      assert.ok(Math.abs(halved.admitFraction - stepped.admitFraction / 2) < 1e-6);
      // Measured again (6 in 2 s: 3/s), but a rate measured while the chain is jammed does not
      // take it below half the rate noted before.
      assert.equal(halved.servedRatePerSec, 10, "the rate at a halving: half the one noted at the cut (20), not of the stepped one");
      t.ctl.setManual(0.3);
      assert.equal(t.ctl.snapshot().servedRatePerSec, undefined);
      t.clock.advance(2_500);
      assert.ok(arrive(t, 40, 1) < 40, "an operator's fraction holds even when few requests arrive");
    });
  });

  describe("a halving during a spike (the storm lab's metastable run)", () => {
    /** Cut at 20 req/s still served (as above), then a step up and renewed trouble with `servedInWindow` successes in the 2 s window. */
    function halveWith(t: ReturnType<typeof setup>, servedInWindow: number) {
      t.clock.advance(3_000);
      t.ctl.admit(); // the step up
      t.clock.advance(2_100); // the rate window holds only what follows
      t.ok(servedInWindow);
      t.fail(servedInWindow + 21); // below 50% success with at least minVolume outcomes
      assert.equal(t.ctl.snapshot().state, "cut");
      return t.ctl.snapshot().servedRatePerSec ?? 0;
    }
    function cutAt20PerSec() {
      const t = setup();
      t.ok(40);
      t.fail(41);
      assert.equal(t.ctl.snapshot().servedRatePerSec, 20);
      return t;
    }

    it("a chain jammed right after the cut serves almost nothing: the rate noted stays at half the one before, so intake is not held near zero after the spike", () => {
      const t = cutAt20PerSec();
      const noted = halveWith(t, 0);
      // The cut noted 20/s; the halving halves that, whatever the step up since made of it.
      assert.equal(noted, 10, "the rate after a halving that saw nothing served");
      // Once the spike is over (arrivals back at 10/s, below the rate), every request is admitted.
      t.clock.advance(2_100);
      let admitted = 0;
      for (let i = 0; i < 20; i++) {
        if (t.ctl.admit()) admitted++;
        t.clock.advance(100);
      }
      assert.equal(admitted, 20);
    });

    it("paces what the rate admits beyond the fraction: a wave of retries arriving at once gets a burst's worth, not the share of the whole window", () => {
      // Cut to 20 % while 20/s were still served (40 of 200, judged at 200 calls).
      const t = setup({ minVolume: 200 });
      t.ok(40);
      t.fail(160);
      assert.deepEqual(state(t.ctl), ["cut", 0.2]);
      assert.equal(t.ctl.snapshot().servedRatePerSec, 20);
      t.clock.advance(2_100); // nothing arrived since: the rate window is empty, the bucket full (250 ms at 20/s: 5)
      // 100 users rejected together come back within 10 ms. Measured over the 2 s window they are
      // 50/s, so the rate's share is 0.4 and more for the first of them: unpaced, about 77 of them
      // went in at once, nearly four seconds of what the chain was serving.
      const admitted = arrive(t, 100, 10_000);
      // The fraction's 20 % of them (about 20) and the bucket's 5 tokens.
      assert.ok(admitted >= 15 && admitted <= 32, `admitted ${admitted} of a wave of 100`);
      // The bucket refills at the rate: once the wave has left the rate window, a steady trickle
      // below the rate goes in whole (one step up since: 30 % and 30/s).
      t.clock.advance(2_100);
      assert.equal(arrive(t, 10, 10), 10);
    });

    it("refuses a burst size that is not positive", () => {
      assert.throws(() => setup({ rateBurstMs: 0 }), /rateBurstMs must be positive/);
    });

    it("when capacity really fell, repeated halvings still take the rate down geometrically", () => {
      const t = cutAt20PerSec();
      // Each round steps up first (raising the rate with the fraction), then halves: the steps do not undo the halvings.
      assert.deepEqual([halveWith(t, 0), halveWith(t, 0), halveWith(t, 0), halveWith(t, 0)], [10, 5, 2.5, 1.25]);
    });

    it("takes what is served now when that is more than half the rate before", () => {
      const t = cutAt20PerSec();
      assert.equal(halveWith(t, 60), 30, "60 served in the 2 s window");
    });
  });

  describe("edges the mutation run found unguarded", () => {
    it("cuts for latency only above the mean limit, and never for latency when none is set", () => {
      const at = setup({ maxMeanLatencyMs: 500 });
      at.ok(20, 500);
      assert.deepEqual(state(at.ctl), ["normal", 1], "a mean exactly at the limit is fine");
      at.ok(1, 600);
      assert.equal(at.ctl.snapshot().state, "cut");
      assert.equal(at.transitions.at(-1)?.reason, "latency");
      const unset = setup();
      unset.ok(100, 60_000);
      assert.deepEqual(state(unset.ctl), ["normal", 1]);
    });

    it("a cut starts a fresh latency window: the slow calls before it do not cut again", () => {
      const { ctl, clock, ok } = setup({ maxMeanLatencyMs: 500 });
      ok(20, 800);
      assert.deepEqual(state(ctl), ["cut", 0.2]);
      clock.advance(10);
      ok(20, 5); // fast calls, started after the cut
      assert.deepEqual(state(ctl), ["cut", 0.2], "judged on the new calls alone");
    });

    it("counts an outcome whose request started exactly at the change, not one that started before", () => {
      const { ctl, clock, fail } = setup();
      fail(20);
      clock.advance(100);
      fail(1, 100); // started at the cut
      assert.equal(ctl.snapshot().window.calls, 1);
      fail(1, 101); // started before it
      assert.equal(ctl.snapshot().window.calls, 1);
    });

    it("in manual operation, outcomes are not judged: releasing it does not cut at once for failures seen meanwhile", () => {
      const { ctl, clock, fail } = setup();
      ctl.setManual(0.5);
      clock.advance(100);
      fail(100, 10); // started after the switch to manual: counted, but not judged
      assert.equal(ctl.snapshot().window.calls, 100);
      assert.deepEqual(state(ctl), ["manual", 0.5]);
      ctl.setManual(null);
      assert.deepEqual(state(ctl), ["recovering", 0.5]);
      fail(1);
      assert.deepEqual(state(ctl), ["recovering", 0.5], "one failure after the release is below the minimum volume");
    });

    it("listeners can subscribe and unsubscribe after construction", () => {
      const clock = new FakeClock(0);
      const ctl = new IntakeController({ clock });
      const seen: string[] = [];
      const off = ctl.onTransition((t) => seen.push(t.to));
      ctl.setManual(0.3);
      off();
      ctl.setManual(null);
      assert.deepEqual(seen, ["manual"]);
    });

    it("refuses settings outside their ranges, naming them", () => {
      const clock = new FakeClock(0);
      assert.throws(() => new IntakeController({ clock, minSuccessRate: 1.5 }), /^RangeError: minSuccessRate must be in \[0, 1\], got 1.5$/);
      assert.throws(() => new IntakeController({ clock, cutFraction: -0.1 }), /cutFraction must be in \[0, 1\]/);
      assert.throws(() => new IntakeController({ clock, stepFraction: 1.5 }), /stepFraction/);
      assert.throws(() => new IntakeController({ clock, stepIntervalMs: -1 }), /stepIntervalMs must be positive/);
      assert.throws(() => new IntakeController({ clock, minVolume: 0.5 }), /minVolume must be >= 1/);
      assert.throws(() => new IntakeController({ clock, cutFraction: 0.2, minFraction: 0.3 }), /minFraction must not exceed/);
      assert.doesNotThrow(() => new IntakeController({ clock, stepFraction: 1, minVolume: 1, cutFraction: 0.2, minFraction: 0.2 }));
      const ctl = new IntakeController({ clock });
      assert.throws(() => ctl.setManual(1.1), /^RangeError: manual fraction must be in \[0, 1\], got 1.1$/);
    });

    it("steps from a cut to normal when the next step reaches 100 %, reason step_up", () => {
      const { ctl, clock, fail, transitions } = setup({ cutFraction: 0.95, minFraction: 0.05 });
      fail(20);
      clock.advance(3_000);
      assert.deepEqual(state(ctl), ["normal", 1]);
      assert.deepEqual(transitions.at(-1), { from: "cut", to: "normal", admitFraction: 1, reason: "step_up", at: clock.now() });
    });
  });
});
