import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FakeScheduler, systemScheduler } from "./scheduler.js";

describe("FakeScheduler", () => {
  it("fires timers in due order at their own moment", () => {
    const s = new FakeScheduler(100);
    const fired: Array<[string, number]> = [];
    s.setTimeout(() => fired.push(["b", s.now()]), 20);
    s.setTimeout(() => fired.push(["a", s.now()]), 10);
    s.setTimeout(() => fired.push(["c", s.now()]), 20);
    s.advance(15);
    assert.deepEqual(fired, [["a", 110]]);
    s.advance(100);
    assert.deepEqual(fired, [
      ["a", 110],
      ["b", 120],
      ["c", 120],
    ]);
    assert.equal(s.now(), 215);
  });

  it("fires timers scheduled by a firing timer when they fall within the advance", () => {
    const s = new FakeScheduler();
    const fired: number[] = [];
    s.setTimeout(() => {
      fired.push(s.now());
      s.setTimeout(() => fired.push(s.now()), 5);
    }, 5);
    s.advance(12);
    assert.deepEqual(fired, [5, 10]);
  });

  it("cancels, idempotently", () => {
    const s = new FakeScheduler();
    let fired = 0;
    const cancel = s.setTimeout(() => fired++, 5);
    assert.equal(s.pendingTimers(), 1);
    cancel();
    cancel();
    s.advance(10);
    assert.equal(fired, 0);
    assert.equal(s.pendingTimers(), 0);
  });

  it("does not go back", () => {
    assert.throws(() => new FakeScheduler().advance(-1), RangeError);
  });
});

it("systemScheduler drives the global timers (mocked here, so no sleeping)", (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const fired: string[] = [];
  const cancel = systemScheduler.setTimeout(() => fired.push("cancelled"), 1);
  systemScheduler.setTimeout(() => fired.push("kept"), 5);
  systemScheduler.setTimeout(() => fired.push("negative delay runs at once"), -10);
  cancel();
  t.mock.timers.tick(5);
  assert.deepEqual(fired, ["negative delay runs at once", "kept"]);
});
