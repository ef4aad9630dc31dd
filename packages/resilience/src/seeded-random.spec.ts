import assert from "node:assert/strict";
import { it } from "node:test";
import { seededRandom } from "./seeded-random.js";

it("seededRandom is deterministic per seed, in [0, 1), and differs across seeds", () => {
  const a = seededRandom(1);
  const b = seededRandom(1);
  const c = seededRandom(2);
  const xs = Array.from({ length: 1_000 }, () => a());
  assert.deepEqual(
    xs,
    Array.from({ length: 1_000 }, () => b()),
  );
  assert.notDeepEqual(
    xs.slice(0, 10),
    Array.from({ length: 10 }, () => c()),
  );
  assert.ok(xs.every((x) => x >= 0 && x < 1));
  const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
  assert.ok(Math.abs(mean - 0.5) < 0.05, `mean ${mean}`);
});
