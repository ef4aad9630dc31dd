/**
 * The storm lab in quick mode, inside `npm test`, part two: the metastable
 * spike (platform, then naive), each on a fresh platform, with the lab's
 * users (patience 2 s, 3 tries). Each run measures its platform's capacity
 * and offers load relative to it (0.6x, a 2x spike, 0.6x); every assertion
 * is a ratio measured in the same run, never an absolute time or rate.
 * The outages (fixed rates, counts per request) are test/storm-lab-outages.test.ts.
 *
 * Charts, tables and JSON of this run: reports/storm/test-quick/ (index.html).
 */
// npm test: alone (it measures the platform's capacity and offers load relative to it; other files' work starves its chains)
import { before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { RunResult } from "../lab/analyze.js";
import { columnHelp } from "../lab/report/table.js";
import { reportQuickRun } from "../lab/report/quick-report.js";
import { scenarioNamed } from "../lab/scenarios.js";
import { resultOf, warningsOf } from "../lab/run-results.js";
import { runStorm } from "../lab/storm.js";

let results: RunResult[] = [];

const result = (scenario: string, variant: string): RunResult => resultOf(results, scenario, variant);

/** The runs' own warnings, appended to a failure message. */
const context = warningsOf;

describe("storm lab (quick): metastable", () => {
  before(
    async () => {
      results = await runStorm({
        scenarios: [scenarioNamed("metastable")],
        profiles: ["naive", "platform"],
        quick: true,
        clientTimeoutMs: 2000,
        failover: "stop",
        // Each run sized from its own capacity (the scenario's `sizedPerVariant`), the two at once,
        // each on its own core (its platform, database and load processes pinned there).
        measureEachRun: false,
        splitCores: true,
        ablation: false,
        repeat: 1,
        // Compiled services (what `npm start` runs): tsx costs each service seconds of CPU at start.
        from: "build",
        log: (line) => console.log(`[storm] ${line}`),
      });
      reportQuickRun(results, "test-quick", columnHelp);
    },
    // A machine at a load average of 30 took over 300 s for the whole quick lab.
    { timeout: 600_000 },
  );

  test("the platform never stores two orders for one user operation", () => {
    const p = result("metastable", "platform");
    assert.ok(p.orders.stored > 0, "metastable/platform: the run placed orders at all");
    assert.equal(p.orders.duplicates, 0, `metastable/platform: ${p.orders.duplicates} duplicate orders`);
  });

  test("metastable: with users who try again, the platform's goodput comes back after the spike and the naive stack's does not", (t) => {
    const p = result("metastable", "platform");
    const n = result("metastable", "naive");
    for (const w of [...p.warnings, ...n.warnings]) t.diagnostic(w);
    // The spike must really have been sent above capacity: a load generator too starved to
    // produce it would make "recovers" meaningless (the rate asked for is 2x in quick mode by definition;
    // what was sent is measured).
    assert.ok(
      p.windows.trigger.sentPerSec > p.capacity.referencePerSec,
      `platform: ${p.windows.trigger.sentPerSec} req/s sent during the spike, capacity ${p.capacity.referencePerSec}`,
    );
    assert.ok(
      n.windows.trigger.sentPerSec > n.capacity.referencePerSec,
      `naive: ${n.windows.trigger.sentPerSec} req/s sent during the spike, capacity ${n.capacity.referencePerSec}`,
    );
    // And it really overloaded: some users who came during the spike were not served on any
    // try. If every one was, the machine could do more than its capacity was measured at
    // (it was busier then) and nothing below says anything.
    assert.ok(
      n.windows.trigger.usersServedRatio < 1,
      `naive served ${Math.round(n.windows.trigger.usersServedRatio * 100)}% of the spike's users: the spike did not overload${context(n)}`,
    );
    // The end of the run (its last 3 s): the post-spike window also holds the recovery itself.
    assert.ok(
      p.recovery.endGoodputRatio >= 0.8,
      `platform goodput at the end of the run is ${Math.round(p.recovery.endGoodputRatio * 100)}% of its ${p.recovery.normalGoodputPerSec} req/s before the spike${context(p)}`,
    );
    assert.ok(
      n.recovery.endGoodputRatio < p.recovery.endGoodputRatio,
      `naive ${Math.round(n.recovery.endGoodputRatio * 100)}% vs platform ${Math.round(p.recovery.endGoodputRatio * 100)}% of goodput before the spike, at the end of the run${context(p, n)}`,
    );
  });
});
