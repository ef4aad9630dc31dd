/**
 * The storm lab in quick mode, inside `npm test`: the full-outage and the
 * metastable scenarios, each for both profiles on fresh platforms (about
 * 2 minutes on 2 cores: the metastable run has to outlast the platform's
 * stepwise readmission after an intake cut, 10% every 2 s). Every assertion
 * compares counts and ratios measured in the same run, never absolute times
 * or rates: the machine may be shared.
 *
 * Charts and JSON of this run: reports/storm/test-quick/.
 */
import { before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import type { RunResult } from "../lab/analyze.js";
import { columnHelp, resultsTable, warningLines } from "../lab/report/table.js";
import { writeReport } from "../lab/report/write-report.js";
import { scenarioNamed, scenarios } from "../lab/scenarios.js";
import { runStorm } from "../lab/storm.js";

let results: RunResult[] = [];

function result(scenario: string, profile: string): RunResult {
  const r = results.find((x) => x.scenario === scenario && x.profile === profile);
  assert.ok(r, `no result for ${scenario}/${profile}`);
  return r;
}

/** The run's own warnings (unhealthy baseline, crashed service), appended to a failure message. */
function context(...runs: RunResult[]): string {
  const w = runs.flatMap((r) => r.warnings.map((x) => `${r.scenario}/${r.profile}: ${x}`));
  return w.length === 0 ? "" : ` [${w.join("; ")}]`;
}

describe("storm lab (quick)", () => {
  before(async () => {
    results = await runStorm({
      scenarios: [scenarioNamed("full-outage"), scenarioNamed("metastable")],
      profiles: ["platform", "naive"],
      quick: true,
      clientTimeoutMs: 2000,
      failover: "stop",
      // One measurement (the first run's) sets the rates of all four runs.
      measureEachRun: false,
      log: (line) => console.log(`[storm] ${line}`),
    });
    const table = [resultsTable(results), ...warningLines(results)].join("\n");
    console.log(`[storm]\n${table}\n${columnHelp.join("\n")}`);
    writeReport(join(process.cwd(), "reports", "storm", "test-quick"), results, table, Object.fromEntries(scenarios.map((s) => [s.name, s.title])), {
      generatedAt: new Date().toISOString(),
      quick: true,
    });
  });

  test("full outage: the platform's database work per request stays within the retry budget", (t) => {
    const p = result("full-outage", "platform");
    for (const w of p.warnings) t.diagnostic(`full-outage/platform: ${w}`);
    const w = p.windows.trigger;
    const requests = w.offeredPerSec * (w.toSec - w.fromSec);
    // 1.0 = the same transactions per request as before the outage. The
    // gateway's budget allows 10% retries plus a reserve that is always
    // there (RETRY_BUDGET_MIN_PER_SEC 1 x RETRY_BUDGET_TTL_MS 10 s = 10
    // retries): at quick-mode rates that reserve is a visible share.
    const reserveRetries = 10;
    const allowed = 1.3 + reserveRetries / Math.max(1, requests);
    assert.ok(
      p.amplification.triggerVsBaseline <= allowed,
      `platform: ${p.amplification.triggerDbTxPerRequest} db transactions per request during the outage vs ${p.amplification.baselineDbTxPerRequest} before ` +
        `(x${p.amplification.triggerVsBaseline}; allowed x${allowed.toFixed(2)} for ${Math.round(requests)} requests)${context(p)}`,
    );
    // Exactly one layer retries: below the gateway, at most one attempt per call.
    assert.ok(p.amplification.hopsPerRequest.checkout <= 1.3, `checkout received ${p.amplification.hopsPerRequest.checkout} requests per user request`);
    assert.ok(p.amplification.hopsPerRequest.pricing <= 1.3, `pricing received ${p.amplification.hopsPerRequest.pricing} requests per user request`);
  });

  test("full outage: the naive stack multiplies database work at least twice as much as the platform", () => {
    const p = result("full-outage", "platform");
    const n = result("full-outage", "naive");
    assert.ok(
      n.amplification.triggerVsBaseline >= 2 * p.amplification.triggerVsBaseline,
      `naive x${n.amplification.triggerVsBaseline} vs platform x${p.amplification.triggerVsBaseline} (db transactions per request during the outage / before it)${context(p, n)}`,
    );
  });

  test("the platform never stores two orders for one user operation", () => {
    for (const scenario of ["full-outage", "metastable"]) {
      const p = result(scenario, "platform");
      assert.ok(p.orders.stored > 0, `${scenario}: the run placed orders at all`);
      assert.equal(p.orders.duplicates, 0, `${scenario}: ${p.orders.duplicates} duplicate orders`);
    }
  });

  test("metastable: after a spike over capacity, the platform's goodput comes back by itself", (t) => {
    const p = result("metastable", "platform");
    // An unhealthy baseline (a busy machine) makes "80% of before" a weak bar: say so in the output.
    for (const w of p.warnings) t.diagnostic(`metastable/platform: ${w}`);
    assert.ok(p.rates.during > p.capacity.referencePerSec, "the spike is over the measured capacity");
    assert.ok(
      p.recovery.endGoodputRatio >= 0.8,
      `platform goodput at the end of the run is ${Math.round(p.recovery.endGoodputRatio * 100)}% of its ${p.recovery.normalGoodputPerSec} req/s before the spike${context(p)}`,
    );
  });
});
