import { test } from "node:test";
import assert from "node:assert/strict";
import { FakeClock } from "@platform/resilience";
import { defaultOutlierDetection, OutlierDetector } from "./outlier-detector.js";

function detector(addresses: string[], config = defaultOutlierDetection) {
  const clock = new FakeClock();
  const d = new OutlierDetector(clock, config);
  for (const a of addresses) d.add(a);
  return { clock, d };
}

test("a refused connection ejects the replica at once, for the base ejection time", () => {
  const { clock, d } = detector(["a", "b", "c"]);
  assert.equal(d.record("a", "refused"), true);
  assert.equal(d.available("a"), false);
  clock.advance(999);
  assert.equal(d.available("a"), false);
  clock.advance(1);
  assert.equal(d.available("a"), true, "readmitted after 1 s");
});

test("five failures in a row eject; four do not; a success in between starts the count over", () => {
  const { d } = detector(["a", "b", "c"]);
  for (let i = 0; i < 4; i++) assert.equal(d.record("a", "failure"), false);
  d.record("a", "success");
  for (let i = 0; i < 4; i++) assert.equal(d.record("a", "failure"), false);
  assert.equal(d.record("a", "failure"), true);
  assert.equal(d.available("a"), false);
});

test("failing most calls while the others succeed ejects, even without five in a row", () => {
  const { d } = detector(["a", "b", "c"]);
  for (let i = 0; i < 10; i++) {
    d.record("b", "success");
    d.record("c", "success");
  }
  let ejected = false;
  for (let i = 0; i < 10 && !ejected; i++) {
    d.record("a", "success");
    ejected = d.record("a", "failure");
  }
  assert.equal(ejected, true, "half of a's calls failed, none of the others'");
});

test("when every replica fails alike, the failure-rate rule ejects none (that is the breaker's business)", () => {
  const { d } = detector(["a", "b", "c"]);
  for (let i = 0; i < 10; i++) {
    for (const r of ["a", "b", "c"]) {
      d.record(r, "success");
      assert.equal(d.record(r, "failure"), false, `${r} at ${i}`);
    }
  }
});

test("a failed probe ejects again for twice as long, up to the maximum; healthy for that long starts the backoff over", () => {
  const { clock, d } = detector(["a", "b"]);
  const lengths: number[] = [];
  for (let round = 0; round < 6; round++) {
    assert.equal(d.record("a", "refused"), true);
    const from = clock.now();
    while (!d.available("a")) clock.advance(100);
    lengths.push(clock.now() - from);
  }
  assert.deepEqual(lengths, [1_000, 2_000, 4_000, 8_000, 10_000, 10_000]);
  d.record("a", "success");
  assert.equal(d.record("a", "failure"), false, "out of probation, one failure is not enough");
  clock.advance(10_000);
  d.record("a", "success");
  d.record("a", "refused");
  const from = clock.now();
  while (!d.available("a")) clock.advance(100);
  assert.equal(clock.now() - from, 1_000, "after 10 s healthy the backoff starts again at 1 s");
});

test("at most half of the replicas (at least one of two) are ejected at once, and never the only one", () => {
  const three = detector(["a", "b", "c"]).d;
  assert.equal(three.record("a", "refused"), true);
  assert.equal(three.record("b", "refused"), false, "one of three is the most");
  assert.equal(three.ejectedCount(), 1);
  const two = detector(["a", "b"]).d;
  assert.equal(two.record("a", "refused"), true);
  const one = detector(["a"]).d;
  assert.equal(one.record("a", "refused"), false);
  assert.equal(one.available("a"), true);
});
