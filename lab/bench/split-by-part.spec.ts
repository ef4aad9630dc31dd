import assert from "node:assert/strict";
import { test } from "node:test";
import type { TargetResult } from "./leg.js";
import { splitByPart } from "./run-bench.js";

const target = (succeeded: number, busyMs: number): TargetResult => ({ succeeded, failed: {}, failureSamples: {}, latenciesMs: [], busyMs });
const parts = [
  { system: "platform", cellId: "gateway PlaceOrder grpc-h2c x32" },
  { system: "plain", cellId: "gateway PlaceOrder grpc-h2c x32" },
] as const;

test("a shared leg gives each chain the time its users spent in its calls (Little's law): rates of users / mean latency, whatever the slices", () => {
  // 32 users; the platform's 320 calls took 200 ms each, the plain chain's 400 took 160 ms each.
  const [platform, plain] = splitByPart({ ...target(320, 320 * 200), elapsedMs: 4000, alternate: target(400, 400 * 160) }, parts, 32);
  assert.equal(platform!.elapsedMs, 2000);
  assert.equal(plain!.elapsedMs, 2000);
  const rate = (p: { result: TargetResult; elapsedMs: number }) => (p.result.succeeded / p.elapsedMs) * 1000;
  assert.equal(rate(platform!), 32 / 0.2);
  assert.equal(rate(plain!), 32 / 0.16);
  // Different chains' processes did only their own chain's work; PostgreSQL, which both use, is split by time.
  assert.deepEqual([platform!.own, plain!.own, platform!.shared, plain!.shared], [1, 1, 0.5, 0.5]);
});

test("one user alternating in blocks: each part's time is its calls' time, as before", () => {
  const [a, b] = splitByPart({ ...target(40, 400), elapsedMs: 1000, alternate: target(40, 600) }, parts, 1);
  assert.deepEqual([a!.elapsedMs, b!.elapsedMs, a!.shared, b!.shared], [400, 600, 0.4, 0.6]);
});

test("a leg with one target is the whole leg's", () => {
  const [only, none] = splitByPart({ ...target(100, 32 * 1000), elapsedMs: 1000 }, parts, 32);
  assert.deepEqual([only!.elapsedMs, only!.own, only!.shared, none], [1000, 1, 1, undefined]);
});
