import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AdaptiveLimit, type AdaptiveLimitOptions } from "./adaptive-limit.js";
import { FakeClock } from "./clock.js";

function setup(overrides: Partial<AdaptiveLimitOptions> = {}) {
  const clock = new FakeClock(1_000);
  const limit = new AdaptiveLimit({ minLimit: 2, maxLimit: 40, initialLimit: 10, clock, windowMs: 500, minWindowSamples: 5, ...overrides });
  /**
   * Closes `windows` windows of 5 samples each lasting `ms`. `busy` (default)
   * keeps the limit in use, as a dependency under demand does.
   */
  const run = (windows: number, ms: number, opts: { dropped?: boolean; busy?: boolean } = {}) => {
    const trace: number[] = [];
    for (let i = 0; i < windows; i++) {
      clock.advance(500);
      for (let s = 0; s < 5; s++) {
        const inFlight = opts.busy === false ? 1 : limit.limit();
        limit.onSample({ durationMs: ms, inFlight, ...(opts.dropped ? { dropped: true } : {}) });
      }
      trace.push(limit.limit());
    }
    return trace;
  };
  return { clock, limit, run };
}

const nonIncreasing = (xs: number[]) => xs.every((x, i) => i === 0 || x <= xs[i - 1]!);
const nonDecreasing = (xs: number[]) => xs.every((x, i) => i === 0 || x >= xs[i - 1]!);

describe("AdaptiveLimit", () => {
  it("starts at the initial limit (default: the minimum)", () => {
    assert.equal(setup().limit.limit(), 10);
    assert.equal(new AdaptiveLimit({ minLimit: 3, maxLimit: 9, clock: new FakeClock() }).limit(), 3);
  });

  it("grows while latency stays at its baseline and the limit is in use, up to the maximum and no further", () => {
    const { limit, run } = setup();
    const trace = run(200, 5);
    assert.ok(nonDecreasing(trace), `never shrinks at steady latency: ${trace.join(",")}`);
    assert.ok(trace[20]! > 10, `grew: ${trace.slice(0, 21).join(",")}`);
    assert.equal(limit.limit(), 40, "reaches the maximum");
    assert.equal(Math.max(...trace), 40, "never beyond it");
  });

  it("does not grow when demand uses less than half of the limit (nothing says more would help)", () => {
    const { limit, run } = setup();
    run(50, 5, { busy: false });
    assert.equal(limit.limit(), 10);
  });

  it("shrinks when latency rises beyond the tolerance, step by step down to the minimum and no further", () => {
    const { limit, run } = setup();
    run(20, 5);
    const healthy = limit.limit();
    const trace = run(30, 50); // 10x the baseline
    assert.ok(trace[0]! < healthy, `first slow window already shrinks: ${healthy} -> ${trace[0]}`);
    assert.ok(nonIncreasing(trace), `only shrinks while slow: ${trace.join(",")}`);
    assert.equal(limit.limit(), 2, "settles at the minimum");
    assert.equal(Math.min(...trace), 2, "never below it");
    // Gradual: no window cuts more than the steepest gradient (0.5) allows.
    const steps = [healthy, ...trace];
    for (let i = 1; i < steps.length; i++) assert.ok(steps[i]! >= Math.floor(steps[i - 1]! * 0.75), `step ${steps[i - 1]} -> ${steps[i]}`);
  });

  it("shrinks in proportion: mild inflation cuts less per window than severe inflation", () => {
    const mild = setup();
    mild.run(20, 10);
    const severe = setup();
    severe.run(20, 10);
    assert.equal(mild.limit.limit(), severe.limit.limit());
    const start = mild.limit.limit();
    mild.run(1, 30); // 3x: gradient 0.67
    severe.run(1, 100); // 10x: gradient 0.5 (the floor)
    assert.ok(mild.limit.limit() < start, "mild inflation still shrinks");
    assert.ok(severe.limit.limit() < mild.limit.limit(), `${severe.limit.limit()} < ${mild.limit.limit()}`);
  });

  it("tolerates inflation within the tolerance (jitter, a busier moment) without shrinking", () => {
    const { limit, run } = setup();
    run(20, 10);
    const before = limit.limit();
    const trace = run(20, 19); // 1.9x < 2x
    assert.ok(nonDecreasing(trace), trace.join(","));
    assert.ok(limit.limit() >= before);
  });

  it("grows back when latency recovers", () => {
    const { limit, run } = setup();
    run(30, 5);
    const healthy = limit.limit();
    run(30, 200);
    assert.equal(limit.limit(), 2, "shrunk to the minimum while slow");
    const trace = run(60, 5);
    assert.ok(nonDecreasing(trace), `recovers monotonically: ${trace.join(",")}`);
    assert.ok(limit.limit() >= healthy, `back to at least ${healthy}, got ${limit.limit()}`);
  });

  it("learns its baseline from calls, not from time: after a quiet start, a busy dependency whose latency rose for good (CPU contention) gets its slots back within seconds", () => {
    const { clock, limit, run } = setup();
    run(12, 2, { busy: false }); // one call at a time: a baseline of 2 ms
    const trace: number[] = [];
    for (let w = 0; w < 20; w++) {
      clock.advance(500);
      // 100 calls per window at 30 ms (15x the quiet baseline), the limit in use
      for (let s = 0; s < 100; s++) limit.onSample({ durationMs: 30, inFlight: limit.limit() });
      trace.push(limit.limit());
    }
    assert.ok(Math.min(...trace) >= 5, `never driven to the minimum: ${trace.join(",")}`);
    assert.equal(limit.limit(), 40, `back to the maximum within 20 windows (10 s): ${trace.join(",")}`);
  });

  it("keeps a stalled dependency at its minimum: a few slow calls a window teach the baseline little", () => {
    const { clock, limit, run } = setup();
    run(12, 2, { busy: false });
    const trace: number[] = [];
    for (let w = 0; w < 30; w++) {
      clock.advance(10_000);
      // 5 calls per 10 s window at 2 s each (the minimum's slots, full): 150 calls in 5 minutes
      for (let s = 0; s < 5; s++) limit.onSample({ durationMs: 2_000, inFlight: limit.limit() });
      trace.push(limit.limit());
    }
    assert.ok(nonIncreasing(trace), trace.join(","));
    assert.deepEqual(trace.slice(5), Array(25).fill(2), `at the minimum after its first windows: ${trace.join(",")}`);
  });

  it("counts calls that ran out of time with their elapsed time, and never learns a baseline from them", () => {
    const { limit, run } = setup();
    run(20, 5);
    const before = limit.snapshot();
    run(10, 3_000, { dropped: true });
    const after = limit.snapshot();
    assert.equal(after.limit, 2, "a dependency that only times out is driven to the minimum");
    assert.equal(after.recentMs, 3_000);
    assert.equal(after.baselineMs, before.baselineMs, "the baseline is untouched by timeouts");
  });

  it("shrinks on timeouts alone even before any call has finished (a cold start into a stall)", () => {
    const { limit, run } = setup();
    const trace = run(10, 5_000, { dropped: true });
    assert.ok(nonIncreasing(trace) && limit.limit() === 2, trace.join(","));
    assert.equal(limit.snapshot().baselineMs, 0);
  });

  it("keeps a quiet window open until it has enough samples", () => {
    const { limit, clock } = setup();
    for (let i = 0; i < 4; i++) {
      clock.advance(10_000);
      limit.onSample({ durationMs: 1_000, inFlight: 10, dropped: true });
    }
    assert.equal(limit.limit(), 10, "4 samples: no decision yet");
    assert.equal(limit.snapshot().recentMs, 0);
    limit.onSample({ durationMs: 1_000, inFlight: 10, dropped: true });
    assert.ok(limit.limit() < 10, "the fifth closes the window");
  });

  it("keeps a busy window open until its time is up", () => {
    const { limit, clock } = setup();
    for (let i = 0; i < 100; i++) limit.onSample({ durationMs: 5_000, inFlight: 10, dropped: true });
    assert.equal(limit.limit(), 10);
    clock.advance(500);
    limit.onSample({ durationMs: 5_000, inFlight: 10, dropped: true });
    assert.ok(limit.limit() < 10);
  });

  it("ignores nonsense samples", () => {
    const { limit, run } = setup();
    run(20, 5);
    const before = limit.snapshot();
    for (const ms of [-1, Number.NaN, Number.POSITIVE_INFINITY]) for (let i = 0; i < 10; i++) limit.onSample({ durationMs: ms, inFlight: 40 });
    assert.deepEqual(limit.snapshot(), before);
  });

  it("refuses nonsensical options", () => {
    const clock = new FakeClock();
    assert.throws(() => new AdaptiveLimit({ minLimit: 0, maxLimit: 4, clock }), RangeError);
    assert.throws(() => new AdaptiveLimit({ minLimit: 4, maxLimit: 3, clock }), RangeError);
    assert.throws(() => new AdaptiveLimit({ minLimit: 1, maxLimit: 4, initialLimit: 5, clock }), RangeError);
    assert.throws(() => new AdaptiveLimit({ minLimit: 1, maxLimit: 4, tolerance: 0.9, clock }), RangeError);
    assert.throws(() => new AdaptiveLimit({ minLimit: 1, maxLimit: 4, smoothing: 0, clock }), RangeError);
    assert.throws(() => new AdaptiveLimit({ minLimit: 1, maxLimit: 4, windowMs: 0, clock }), RangeError);
  });
});
