import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { LatencyEstimate } from "./latency-estimate.js";
import { seededRandom } from "./seeded-random.js";

describe("LatencyEstimate", () => {
  it("answers 0, or the configured initial value, until it has observed a call", () => {
    assert.equal(new LatencyEstimate().expectedMs(), 0);
    assert.equal(new LatencyEstimate({ initialMs: 80 }).expectedMs(), 80);
    assert.equal(new LatencyEstimate({ initialMs: 80 }).meanMs(), 80);
  });

  it("starts cautious after one sample (deviation = half the sample, as in RFC 6298)", () => {
    const e = new LatencyEstimate();
    e.observe(100);
    assert.equal(e.meanMs(), 100);
    assert.equal(e.expectedMs(), 200);
  });

  it("converges to the latency of a steady dependency", () => {
    const e = new LatencyEstimate();
    for (let i = 0; i < 200; i++) e.observe(40);
    assert.ok(Math.abs(e.meanMs() - 40) < 1e-9);
    assert.ok(e.expectedMs() - 40 < 0.01, `${e.expectedMs()}`);
  });

  it("sits above the mean, near a high percentile, for a noisy dependency", () => {
    const e = new LatencyEstimate();
    const random = seededRandom(9);
    const samples: number[] = [];
    for (let i = 0; i < 5_000; i++) {
      const ms = 50 + random() * 100; // uniform 50..150
      samples.push(ms);
      e.observe(ms);
    }
    samples.sort((a, b) => a - b);
    const p50 = samples[2_500] ?? 0;
    const p99 = samples[4_950] ?? 0;
    assert.ok(e.expectedMs() > p50 + 20, `expected ${e.expectedMs()} vs p50 ${p50}`);
    assert.ok(e.expectedMs() < p99 + 60, `expected ${e.expectedMs()} vs p99 ${p99}`);
  });

  it("follows a dependency that slows down within tens of calls", () => {
    const e = new LatencyEstimate();
    for (let i = 0; i < 100; i++) e.observe(10);
    for (let i = 0; i < 30; i++) e.observe(500);
    assert.ok(e.meanMs() > 450, `${e.meanMs()}`);
    assert.ok(e.expectedMs() >= e.meanMs());
  });

  it("reacts to a jump at once through the deviation", () => {
    const e = new LatencyEstimate();
    for (let i = 0; i < 100; i++) e.observe(10);
    e.observe(1_000);
    // One slow call moves the mean by 1/8 but the cautious value by much more.
    assert.ok(e.expectedMs() > 10 + 1_000 / 8 + 2 * 240, `${e.expectedMs()}`);
  });

  it("ignores nonsense samples", () => {
    const e = new LatencyEstimate();
    e.observe(-1);
    e.observe(Number.NaN);
    e.observe(Number.POSITIVE_INFINITY);
    assert.equal(e.count(), 0);
    assert.equal(e.expectedMs(), 0);
  });

  it("honours the deviations setting", () => {
    const e = new LatencyEstimate({ deviations: 0 });
    e.observe(100);
    assert.equal(e.expectedMs(), 100);
  });

  it("refuses nonsensical settings", () => {
    assert.throws(() => new LatencyEstimate({ alpha: 0 }), RangeError);
    assert.throws(() => new LatencyEstimate({ beta: 1.5 }), RangeError);
    assert.throws(() => new LatencyEstimate({ deviations: -1 }), RangeError);
    assert.throws(() => new LatencyEstimate({ initialMs: -5 }), RangeError);
  });
});
