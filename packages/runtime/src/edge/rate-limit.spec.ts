import { test } from "node:test";
import assert from "node:assert/strict";
import { RateLimiter } from "./rate-limit.js";

test("each client gets its burst, then the sustained rate, independently of others", () => {
  let now = 0;
  const rl = new RateLimiter({ perSecond: 2, burst: 3 }, () => now);
  assert.deepEqual([rl.take("a"), rl.take("a"), rl.take("a")], [0, 0, 0]);
  assert.equal(rl.take("a"), 500, "the 4th waits for the next token (1 / 2 per s)");
  assert.equal(rl.take("b"), 0, "another client is not affected");
  now += 500;
  assert.equal(rl.take("a"), 0);
  assert.ok(rl.take("a") > 0);
});

test("off when perSecond is 0", () => {
  const rl = new RateLimiter({ perSecond: 0, burst: 1 });
  for (let i = 0; i < 1000; i++) assert.equal(rl.take("a"), 0);
});

test("tracks a bounded number of clients", () => {
  let now = 0;
  const rl = new RateLimiter({ perSecond: 1, burst: 1 }, () => now, 2);
  rl.take("a");
  rl.take("b");
  rl.take("c"); // forgets "a", the least recently seen
  assert.equal(rl.take("a"), 0, "a starts with a fresh (full) bucket");
  now += 1;
});
