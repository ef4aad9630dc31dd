/**
 * The storm lab in quick mode, inside `npm test`, part two: the metastable
 * spike (platform, then naive), each on a fresh platform, with the lab's
 * users (patience 2 s, 3 tries). Each run measures its platform's open-loop
 * capacity and offers load relative to it (0.6x, a 1.5x spike, 0.6x); every
 * assertion is a verdict from the same run's data, never a time or a rate.
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

/** Pairs run at most, while the spike fails to overload a stack (see `before`). */
const maxPairs = 3;

/** The runs' own warnings, appended to a failure message. */
const context = warningsOf;

describe("storm lab (quick): metastable", () => {
  before(
    async () => {
      // A run whose spike did not overload a stack is invalid (analyze.ts, Overload): its
      // capacity, measured in a 2 s staircase on one core, came out low, and "recovers" says
      // nothing there. Such a pair is run again, up to twice; every verdict below is the
      // first valid pair's, and three invalid pairs fail the test as before.
      for (let attempt = 1; attempt <= maxPairs; attempt++) {
        results = await runPair();
        const invalid = ["platform", "naive"].filter((v) => result("metastable", v).overload?.confirmed !== true);
        if (invalid.length === 0) break;
        console.log(`[storm] pair ${attempt} of ${maxPairs} invalid: the spike did not overload ${invalid.join(" and ")}`);
      }
      reportQuickRun(results, "test-quick", columnHelp);
    },
    // A machine at a load average of 30 took over 300 s for the whole quick lab; a pair is
    // under 60 s on a quiet 2-core machine.
    { timeout: 900_000 },
  );

  const runPair = () =>
    runStorm({
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

  test("the platform never stores two orders for one user operation", () => {
    const p = result("metastable", "platform");
    assert.ok(p.orders.stored > 0, "metastable/platform: the run placed orders at all");
    assert.equal(p.orders.duplicates, 0, `metastable/platform: ${p.orders.duplicates} duplicate orders`);
  });

  test("metastable: the spike overloads both stacks; with users who try again, the platform recovers and the naive stack never does", (t) => {
    const p = result("metastable", "platform");
    const n = result("metastable", "naive");
    for (const w of [...p.warnings, ...n.warnings]) t.diagnostic(w);
    // The spike must really have been sent above capacity: a load generator too starved to
    // produce it would make "recovers" meaningless (the rate asked for is 1.5x by definition;
    // what was sent is measured).
    for (const r of [p, n]) {
      assert.ok(
        r.windows.trigger.sentPerSec > r.capacity.referencePerSec,
        `${r.variant}: ${r.windows.trigger.sentPerSec} req/s sent during the spike, capacity ${r.capacity.referencePerSec}`,
      );
      // And it overloaded the stack (analyze.ts, Overload): a spike the stack served in full
      // leaves nothing to recover from, and "recovers" would say nothing.
      assert.equal(
        r.overload?.confirmed,
        true,
        `${r.variant}: the spike did not overload (served ${r.overload?.goodputVsSent} of what was sent during it)${context(r)}`,
      );
    }
    assert.notEqual(p.recovery.recoveredAfterSec, null, `the platform did not recover within the run${context(p)}`);
    assert.equal(
      n.recovery.recoveredAfterSec,
      null,
      `the naive stack recovered ${n.recovery.recoveredAfterSec} s after the spike (goodput at the end ${Math.round(n.recovery.endGoodputRatio * 100)}% of before)${context(n)}`,
    );
  });
});
