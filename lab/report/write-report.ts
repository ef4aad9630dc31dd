import { mkdirSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import type { RunResult } from "../analyze.js";
import { lineChartSvg, type LineSeries } from "./svg-chart.js";

const palette: Record<string, { goodput: string; offered: string }> = {
  naive: { goodput: "#d62728", offered: "#f4a3a3" },
  platform: { goodput: "#1f77b4", offered: "#9ecae1" },
  "platform-no-breakers": { goodput: "#2ca02c", offered: "#a1d99b" },
};
const ablatedColors = [
  { goodput: "#ff7f0e", offered: "#fdd0a2" },
  { goodput: "#9467bd", offered: "#dadaeb" },
];

function colorOf(variant: string, i: number) {
  return palette[variant] ?? ablatedColors[i % ablatedColors.length]!;
}

/** One chart: offered (sent) load and goodput of each run given, trigger window shaded. */
export function scenarioChart(scenario: string, title: string, runs: readonly RunResult[]): string {
  const series: LineSeries[] = [];
  runs.forEach((r, i) => {
    const c = colorOf(r.variant ?? r.profile, i);
    series.push({ label: `${r.variant ?? r.profile} sent`, color: c.offered, values: r.series.offered, dashed: true });
    series.push({ label: `${r.variant ?? r.profile} goodput`, color: c.goodput, values: r.series.goodput, width: 2.5 });
  });
  const first = runs[0];
  const from = Math.min(...runs.map((r) => r.timeline.trigger.fromSec));
  const to = Math.max(...runs.map((r) => r.timeline.trigger.toSec));
  const shaded = runs.length > 0 ? [{ from, to, label: `trigger ${from.toFixed(1)}-${to.toFixed(1)} s` }] : [];
  const step = first?.series.bucketSec ?? 1;
  const xMax = Math.max(0, ...runs.map((r) => r.series.offered.length * step));
  const recov = runs.map((r) => `${r.variant ?? r.profile}: ${recoveryOf(r)}`).join(", ");
  return lineChartSvg({
    title,
    subtitle: `${scenario}${first?.quick ? " (quick)" : ""}, patience ${first?.clientTimeoutMs ?? "?"} ms, ${first?.user?.maxTries ?? 1} tries; ${recov}`,
    xLabel: `seconds since the load started (${step} s buckets)`,
    yLabel: "requests per second",
    xStep: step,
    xMax,
    series,
    shaded,
    width: 1100,
  });
}

function recoveryOf(r: RunResult): string {
  if (r.overload?.confirmed === false) return "invalid (the trigger did not overload it)";
  return r.recovery.recoveredAfterSec === null ? "did not recover" : `recovered in ${r.recovery.recoveredAfterSec} s`;
}

export interface ReportFiles {
  dir: string;
  json: string;
  table: string;
  index: string;
  charts: string[];
}

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/**
 * Writes results.json, table.txt, one SVG per scenario (the first
 * repetition's naive and platform runs; the full outage also without
 * breakers), one per ablation (platform against the platform without the
 * mechanism), and index.html showing the tables and every chart.
 */
export function writeReport(
  dir: string,
  results: readonly RunResult[],
  table: string,
  titles: Record<string, string>,
  meta: object,
  help: readonly string[] = [],
): ReportFiles {
  mkdirSync(dir, { recursive: true });
  const json = join(dir, "results.json");
  writeFileSync(json, `${JSON.stringify({ ...meta, results }, null, 2)}\n`);
  const tablePath = join(dir, "table.txt");
  writeFileSync(tablePath, `${table}\n${help.length > 0 ? `\n${help.join("\n")}\n` : ""}`);
  const charts: { file: string; caption: string }[] = [];
  const firstRep = results.filter((r) => (r.repetition ?? 1) === 1);
  const scenarios = [...new Set(firstRep.map((r) => r.scenario))];
  for (const scenario of scenarios) {
    const runs = firstRep.filter((r) => r.scenario === scenario);
    const main = runs.filter(
      (r) => !r.variant || r.variant === "naive" || r.variant === "platform" || (r.attribution !== undefined && r.variant === "platform-no-breakers"),
    );
    const file = join(dir, `${scenario}.svg`);
    writeFileSync(file, scenarioChart(scenario, titles[scenario] ?? scenario, main));
    charts.push({ file, caption: titles[scenario] ?? scenario });
    const platform = runs.find((r) => r.variant === "platform");
    for (const ablated of runs.filter((r) => r.mechanismOff && r.variant !== "platform-no-breakers")) {
      const base = ablated.variant.includes("no-breakers") ? runs.find((r) => r.variant === "platform-no-breakers") : platform;
      const f = join(dir, `${scenario}-${ablated.variant}.svg`);
      const title = `${scenario}: ${base?.variant ?? "platform"} vs ${ablated.variant} (${ablated.mechanismOff} off)`;
      writeFileSync(f, scenarioChart(scenario, title, base ? [base, ablated] : [ablated]));
      charts.push({ file: f, caption: title });
    }
  }
  const index = join(dir, "index.html");
  const html = [
    "<!doctype html>",
    '<html lang="en"><head><meta charset="utf-8"><title>Storm lab report</title>',
    "<style>body{font-family:sans-serif;margin:24px;max-width:1200px}pre{font-size:12px;overflow-x:auto;background:#f7f7f7;padding:8px}img{max-width:100%;border:1px solid #ddd;margin:8px 0}</style>",
    "</head><body>",
    "<h1>Storm lab report</h1>",
    `<p>${esc(JSON.stringify(meta))}</p>`,
    `<p><a href="results.json">results.json</a> · <a href="table.txt">table.txt</a></p>`,
    `<pre>${esc(table)}</pre>`,
    help.length > 0 ? `<pre>${esc(help.join("\n"))}</pre>` : "",
    ...charts.map((c) => `<h2>${esc(c.caption)}</h2>\n<img src="${esc(basename(c.file))}" alt="${esc(c.caption)}">`),
    "</body></html>",
  ].join("\n");
  writeFileSync(index, `${html}\n`);
  return { dir, json, table: tablePath, index, charts: charts.map((c) => c.file) };
}
