/**
 * `npm run storm`: every scenario for both profiles and the ablations, each
 * on a fresh platform; prints tables and writes JSON, the tables, SVG charts
 * and an index.html under reports/storm/<time>/. See docs/storm-lab.md.
 *
 *   npm run storm
 *   npm run storm -- --repeat 3
 *   npm run storm -- --scenario full-outage --profile naive
 *   npm run storm -- --quick
 *   npm run build && npm run storm -- --quick --from build --side-by-side   # as the outages test runs it
 *   npm run build && npm run storm -- --quick --from build --scenario metastable --split-cores --no-ablation   # as the metastable test
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { profiles as allProfiles, type Profile } from "./platform/lab-platform.js";
import { attributionHelp, columnHelp, fullReport, receiptsHelp } from "./report/table.js";
import { writeReport } from "./report/write-report.js";
import { scenarioNamed, scenarios as allScenarios } from "./scenarios.js";
import { formatDuration, runStorm, scheduleStorm } from "./storm.js";

const usage = `usage: npm run storm -- [--scenario NAME[,NAME]] [--profile naive|platform] [--quick] [--repeat N]
                          [--no-ablation] [--client-timeout-ms 2000] [--tries 3] [--capacity REQ_PER_SEC]
                          [--measure-each-run] [--failover stop|fault] [--from source|build] [--side-by-side]
                          [--split-cores] [--out DIR] [--dry-run]
scenarios: ${allScenarios.map((s) => s.name).join(", ")}`;

function list(values: string[] | undefined): string[] {
  return (values ?? [])
    .flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter((v) => v !== "");
}

function positiveNumber(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!(n > 0) || !Number.isFinite(n)) throw new Error(`--${name} must be a positive number, got ${JSON.stringify(value)}`);
  return n;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      scenario: { type: "string", multiple: true },
      profile: { type: "string", multiple: true },
      quick: { type: "boolean", default: false },
      "client-timeout-ms": { type: "string" },
      capacity: { type: "string" },
      failover: { type: "string", default: "stop" },
      from: { type: "string", default: "source" },
      "side-by-side": { type: "boolean", default: false },
      "split-cores": { type: "boolean", default: false },
      "measure-each-run": { type: "boolean", default: false },
      out: { type: "string" },
      repeat: { type: "string" },
      tries: { type: "string" },
      "no-ablation": { type: "boolean", default: false },
      "dry-run": { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(usage);
    return;
  }
  const scenarios = list(values.scenario).map(scenarioNamed);
  const profiles = list(values.profile).map((p): Profile => {
    if (p !== "naive" && p !== "platform") throw new Error(`--profile must be naive or platform, got ${JSON.stringify(p)}`);
    return p;
  });
  if (values.failover !== "stop" && values.failover !== "fault") throw new Error(`--failover must be stop or fault`);
  if (values.from !== "source" && values.from !== "build") throw new Error(`--from must be source or build (build: \`npm run build\` first)`);
  const capacity = positiveNumber(values.capacity, "capacity");
  const clientTimeoutMs = positiveNumber(values["client-timeout-ms"], "client-timeout-ms") ?? 2000;

  const repeat = Math.round(positiveNumber(values.repeat, "repeat") ?? 1);
  const tries = Math.round(positiveNumber(values.tries, "tries") ?? 3);
  const stormOpts = {
    scenarios: scenarios.length > 0 ? scenarios : allScenarios,
    profiles: profiles.length > 0 ? profiles : allProfiles,
    quick: values.quick,
    clientTimeoutMs: Math.round(clientTimeoutMs),
    ...(capacity !== undefined ? { capacity } : {}),
    failover: values.failover as "stop" | "fault",
    measureEachRun: values["measure-each-run"],
    from: values.from as "source" | "build",
    sideBySide: values["side-by-side"],
    splitCores: values["split-cores"],
    ablation: !values["no-ablation"],
    repeat,
    user: { maxTries: tries, errorPauseMs: 500, honourRetryAfter: true, maxRetryAfterMs: 5000 },
    log: (line: string) => console.log(line),
  };
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const dir = values.out ?? join(process.cwd(), "reports", "storm", stamp);
  const { plan, totalMs } = scheduleStorm(stormOpts);
  console.log(`report: ${dir}`);
  console.log(
    `plan: ${plan.length} runs (${[...new Set(plan.map((r) => r.scenario.name))].join(", ")}; ${repeat} repetition${repeat > 1 ? "s" : ""}), estimated ${formatDuration(totalMs)} (m:ss) on 2 cores`,
  );
  if (values["dry-run"]) {
    for (const r of plan) console.log(`  ${r.repetition} ${r.scenario.name} / ${r.variant.name}  ~${formatDuration(r.estimateMs)}`);
    return;
  }

  const started = performance.now();
  const results = await runStorm(stormOpts);
  const table = fullReport(results);
  const help = [...columnHelp, "", ...attributionHelp, ...(results.some((r) => r.receipts) ? ["", ...receiptsHelp] : [])];
  console.log(`\n${table}\n\n${help.join("\n")}`);

  const titles = Object.fromEntries(allScenarios.map((s) => [s.name, s.title]));
  const files = writeReport(
    dir,
    results,
    table,
    titles,
    {
      generatedAt: new Date().toISOString(),
      quick: values.quick,
      repeat,
      clientTimeoutMs,
      user: stormOpts.user,
      heldOut: allScenarios.filter((s) => s.heldOut).map((s) => s.name),
      scenarios: allScenarios
        .filter((s) => results.some((r) => r.scenario === s.name))
        .map((s) => ({ name: s.name, title: s.title, summary: s.summary, load: s.load })),
    },
    help,
  );
  console.log(`\nwrote ${files.json}\n      ${files.table}\n${files.charts.map((c) => `      ${c}`).join("\n")}`);
  console.log(`(${formatDuration(performance.now() - started)} m:ss)`);
  console.log(`report: ${files.index}`);
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e instanceof Error ? e.message : e);
    console.error(usage);
    process.exit(1);
  },
);
