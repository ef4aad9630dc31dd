import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { RunResult } from "../analyze.js";
import { lineChartSvg, type LineSeries } from "./svg-chart.js";

const colors: Record<string, { goodput: string; offered: string }> = {
  naive: { goodput: "#d62728", offered: "#f4a3a3" },
  platform: { goodput: "#1f77b4", offered: "#9ecae1" },
};

/** One chart per scenario: offered load and goodput of every profile that ran it, trigger window shaded. */
export function scenarioChart(scenario: string, title: string, runs: readonly RunResult[]): string {
  const series: LineSeries[] = [];
  for (const r of runs) {
    const c = colors[r.profile] ?? { goodput: "#333", offered: "#999" };
    series.push({ label: `${r.profile} offered`, color: c.offered, values: r.series.offered, dashed: true });
    series.push({ label: `${r.profile} goodput`, color: c.goodput, values: r.series.goodput, width: 2.5 });
  }
  for (const r of runs) {
    const c = colors[r.profile] ?? { goodput: "#333", offered: "#999" };
    series.push({ label: `${r.profile} orders/s`, color: c.goodput, values: r.series.orders, width: 1 });
  }
  const first = runs[0];
  // The trigger as it actually was (a database restart takes longer than planned), across profiles.
  const from = Math.min(...runs.map((r) => r.timeline.trigger.fromSec));
  const to = Math.max(...runs.map((r) => r.timeline.trigger.toSec));
  const shaded = runs.length > 0 ? [{ from, to, label: `trigger ${from.toFixed(1)}-${to.toFixed(1)} s` }] : [];
  const xMax = Math.max(0, ...runs.map((r) => r.series.offered.length));
  const recov = runs
    .map((r) => `${r.profile}: ${r.recovery.recoveredAfterSec === null ? "did not recover" : `recovered in ${r.recovery.recoveredAfterSec} s`}`)
    .join(", ");
  return lineChartSvg({
    title,
    subtitle: `${scenario}${first?.quick ? " (quick)" : ""}: client timeout ${first?.clientTimeoutMs ?? "?"} ms; ${recov}`,
    xLabel: "seconds since the load started",
    yLabel: "requests per second",
    xStep: 1,
    xMax,
    series,
    shaded,
  });
}

export interface ReportFiles {
  dir: string;
  json: string;
  table: string;
  charts: string[];
}

/** Writes results.json, table.txt and one SVG per scenario under `dir`. */
export function writeReport(dir: string, results: readonly RunResult[], table: string, titles: Record<string, string>, meta: object): ReportFiles {
  mkdirSync(dir, { recursive: true });
  const json = join(dir, "results.json");
  writeFileSync(json, JSON.stringify({ ...meta, results }, null, 2) + "\n");
  const tablePath = join(dir, "table.txt");
  writeFileSync(tablePath, table + "\n");
  const charts: string[] = [];
  const byScenario = new Map<string, RunResult[]>();
  for (const r of results) byScenario.set(r.scenario, [...(byScenario.get(r.scenario) ?? []), r]);
  for (const [scenario, runs] of byScenario) {
    const file = join(dir, `${scenario}.svg`);
    writeFileSync(file, scenarioChart(scenario, titles[scenario] ?? scenario, runs));
    charts.push(file);
  }
  return { dir, json, table: tablePath, charts };
}
