import { test } from "node:test";
import assert from "node:assert/strict";
import { RecentQuantile } from "./recent-quantile.js";

test("no answer before the minimum of samples; then the quantile of the window's samples", () => {
  const q = new RecentQuantile(0.95, 100, 20, 1);
  for (let i = 1; i <= 19; i++) q.observe(i);
  assert.equal(q.value(), undefined);
  for (let i = 20; i <= 100; i++) q.observe(i);
  assert.equal(q.value(), 95);
});

test("only the last `size` samples count: an old slow spell is forgotten", () => {
  const q = new RecentQuantile(0.95, 50, 20, 1);
  for (let i = 0; i < 50; i++) q.observe(1000);
  for (let i = 0; i < 50; i++) q.observe(5);
  assert.equal(q.value(), 5);
});

test("a quantile outside (0, 1) is refused", () => {
  assert.throws(() => new RecentQuantile(1), /within \(0, 1\)/);
});
