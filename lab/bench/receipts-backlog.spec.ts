import assert from "node:assert/strict";
import { test } from "node:test";
import { gatewayCellId, type Cell } from "./cells.js";
import { backlogLines, receiptsBacklogWarnAt } from "./render.js";
import type { BenchRun, LegRecord } from "./run-bench.js";
import { summarize } from "./summarize.js";

const cellId = gatewayCellId("PlaceOrder", "grpc-h2c", 32);
const cell: Cell = {
  id: cellId,
  kind: "gateway",
  service: "gateway",
  method: "PlaceOrder",
  operation: "checkout.PlaceOrder",
  protocol: "grpc-h2c",
  concurrency: 32,
};
const leg = (system: "platform" | "plain", round: number, succeeded: number, queued: number | undefined): LegRecord => ({
  succeeded,
  failed: {},
  failureSamples: {},
  latenciesMs: [200],
  busyMs: 32 * 1000,
  elapsedMs: 1000,
  round,
  system,
  cellId,
  concurrency: 32,
  cpuMs: {},
  foreignCpuMs: 0,
  ...(queued === undefined ? {} : { receiptsQueuedAtEnd: queued }),
});
const run = (legs: LegRecord[]): BenchRun => ({
  options: { concurrency: 32 } as BenchRun["options"],
  cells: [cell],
  legs,
  memory: { platform: {}, plain: {} },
  startedAt: "",
  durationSec: 0,
});

test("receipts left queued at the legs' end are counted per order, over every round", () => {
  const s = summarize(run([leg("platform", 1, 300, 3), leg("plain", 1, 300, 120), leg("platform", 2, 100, 1), leg("plain", 2, 100, 40)]));
  const c = s.cells[0]!;
  assert.equal(c.platform.receiptsQueuedPerRequest, 4 / 400);
  assert.equal(c.plain.receiptsQueuedPerRequest, 160 / 400);
});

test("a chain that left more than a tenth of its orders' receipts queued is flagged, the other not", () => {
  const s = summarize(run([leg("platform", 1, 400, 40), leg("plain", 1, 400, 41)]));
  assert.equal(receiptsBacklogWarnAt, 0.1);
  const lines = backlogLines(s);
  assert.equal(lines.length, 1);
  assert.match(lines[0]!, /^gateway PlaceOrder .*the plain chain left 0\.10 receipts per order queued/);
});

test("legs that did not count the queue give no number and no flag", () => {
  const s = summarize(run([leg("platform", 1, 400, undefined), leg("plain", 1, 400, 200)]));
  assert.ok(Number.isNaN(s.cells[0]!.platform.receiptsQueuedPerRequest));
  assert.equal(backlogLines(s).length, 1);
});
