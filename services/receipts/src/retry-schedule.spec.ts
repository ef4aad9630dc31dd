import { test } from "node:test";
import assert from "node:assert/strict";
import { afterFailure } from "./retry-schedule.js";

const schedule = { baseMs: 1000, capMs: 8000, maxAttempts: 6 };

test("the ceiling doubles with each failure up to the cap, and the delay is a random fraction of it", () => {
  const ceilings = [1, 2, 3, 4, 5].map((n) => afterFailure(schedule, n, 0.999_999));
  assert.deepEqual(
    ceilings.map((d) => (d.kind === "retry" ? d.delayMs : -1)),
    [999, 1999, 3999, 7999, 7999],
  );
  assert.deepEqual(afterFailure(schedule, 3, 0), { kind: "retry", delayMs: 0 });
  assert.deepEqual(afterFailure(schedule, 3, 0.5), { kind: "retry", delayMs: 2000 });
});

test("after the last attempt of the budget it gives up", () => {
  assert.deepEqual(afterFailure(schedule, 6, 0.5), { kind: "give_up" });
  assert.deepEqual(afterFailure(schedule, 7, 0.5), { kind: "give_up" });
  assert.equal(afterFailure({ ...schedule, maxAttempts: 1 }, 1, 0.5).kind, "give_up");
});

test("a large attempt count does not overflow the ceiling", () => {
  assert.deepEqual(afterFailure({ baseMs: 1000, capMs: 60_000, maxAttempts: 10_000 }, 5000, 0.5), { kind: "retry", delayMs: 30_000 });
});
