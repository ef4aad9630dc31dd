import { test } from "node:test";
import assert from "node:assert/strict";
import { FakeClock } from "@platform/resilience";
import { PeakEwma } from "./peak-ewma.js";

test("no opinion before the first sample; a slower sample is taken at once (the peak)", () => {
  const clock = new FakeClock();
  const e = new PeakEwma(clock, 10_000);
  assert.equal(e.estimateMs, undefined);
  e.observe(5);
  assert.equal(e.estimateMs, 5);
  clock.advance(10);
  e.observe(200);
  assert.equal(e.estimateMs, 200, "one slow answer makes the replica look slow now");
});

test("faster samples pull the estimate down by how much time has passed (tau)", () => {
  const clock = new FakeClock();
  const e = new PeakEwma(clock, 10_000);
  e.observe(200);
  clock.advance(100);
  e.observe(10);
  const afterShortGap = e.estimateMs!;
  assert.ok(afterShortGap > 190 && afterShortGap < 200, `100 ms of 10 s barely moves it: ${afterShortGap}`);
  clock.advance(10_000);
  e.observe(10);
  const expected = afterShortGap * Math.exp(-1) + 10 * (1 - Math.exp(-1));
  assert.ok(Math.abs(e.estimateMs! - expected) < 1e-9, `one tau later: ${e.estimateMs} ~ ${expected}`);
  clock.advance(100_000);
  e.observe(10);
  assert.ok(e.estimateMs! < 10.01, "ten taus later it is the recent latency");
});

test("reset forgets the samples", () => {
  const e = new PeakEwma(new FakeClock());
  e.observe(50);
  e.reset();
  assert.equal(e.estimateMs, undefined);
});

test("between samples the estimate decays toward zero, so an avoided replica is tried again", () => {
  const clock = new FakeClock();
  const e = new PeakEwma(clock, 5_000);
  e.observe(100);
  clock.advance(5_000);
  assert.ok(Math.abs(e.estimateMs! - 100 * Math.exp(-1)) < 1e-9, `one tau without samples: ${e.estimateMs}`);
});
