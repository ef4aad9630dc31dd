import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FakeClock } from "./clock.js";
import { WindowedCounter } from "./windowed-counter.js";

describe("WindowedCounter", () => {
  it("sums what was added within the window", () => {
    const clock = new FakeClock();
    const w = new WindowedCounter(clock, 1_000, 10);
    w.add(3);
    clock.advance(450);
    w.add(4);
    w.add(-2);
    assert.equal(w.sum(), 5);
  });

  it("forgets a slice once it is `slices` slices old", () => {
    const clock = new FakeClock();
    const w = new WindowedCounter(clock, 1_000, 10);
    w.add(1); // slice 0
    clock.advance(500);
    w.add(10); // slice 5
    clock.advance(499); // t=999, slice 9
    assert.equal(w.sum(), 11);
    clock.advance(1); // t=1000, slice 10: slice 0 leaves
    assert.equal(w.sum(), 10);
    clock.advance(500); // slice 15: slice 5 leaves
    assert.equal(w.sum(), 0);
  });

  it("reuses buckets correctly after long idle periods", () => {
    const clock = new FakeClock();
    const w = new WindowedCounter(clock, 1_000, 10);
    w.add(7);
    clock.advance(10_000); // same bucket index, ten windows later
    assert.equal(w.sum(), 0);
    w.add(2);
    assert.equal(w.sum(), 2);
  });

  it("resets", () => {
    const clock = new FakeClock();
    const w = new WindowedCounter(clock, 1_000);
    w.add(5);
    w.reset();
    assert.equal(w.sum(), 0);
    w.add(1);
    assert.equal(w.sum(), 1);
  });

  it("refuses a nonsensical shape", () => {
    const clock = new FakeClock();
    assert.throws(() => new WindowedCounter(clock, 0), RangeError);
    assert.throws(() => new WindowedCounter(clock, 1_000, 0), RangeError);
    assert.throws(() => new WindowedCounter(clock, 1_000, 2.5), RangeError);
  });
});
