import { inspect } from "node:util";
import { analyze, type RunResult } from "./analyze.js";
import { coreHalves } from "@platform/test-support";
import type { Profile } from "./platform/lab-platform.js";
import { warmupMs } from "./capacity.js";
import { runScenario, type RunOptions } from "./run-scenario.js";
import { hasFixedRates, timingOf, type Scenario } from "./scenarios.js";
import { ablations, naive, platform, platformNoBreakers, type Variant } from "./variants.js";

export interface StormOptions {
  scenarios: readonly Scenario[];
  profiles: readonly Profile[];
  quick: boolean;
  clientTimeoutMs: number;
  /** Fixed reference capacity (req/s); otherwise each scenario's first run measures it and every run of that scenario uses it. */
  capacity?: number;
  failover: RunOptions["failover"];
  /** Measure capacity in every run for the report (else only in the first of each scenario). */
  measureEachRun: boolean;
  /** Run the platform with one mechanism off at a time where it matters (docs/storm-lab.md, "Ablation"). */
  ablation: boolean;
  /** Repetitions of the whole plan. */
  repeat: number;
  user?: RunOptions["user"];
  /** Services from their build (`npm run build` first) or their sources. Default: "source". */
  from?: RunOptions["from"];
  /**
   * Start the platform's runs whose rates are fixed (quick mode's
   * `quickRates`: they measure no capacity) all at once, each on its own
   * platform, before the others, which run one at a time on a machine the
   * lab otherwise leaves alone. Their claims are counts per request, which
   * neighbours on the same cores do not change. The naive stack's
   * fixed-rate run (the full outage) starts its platform and its load
   * process with them, but its load only once they are done: its storm is
   * 27 attempts per read, whose CPU would land in its neighbours' windows
   * (when every load started together, a loaded machine served 0.67 of the
   * users during the mailer's outage against 1 before), and neighbours
   * stretch its chains past the outage (starting as their triggers ended, at
   * a load average of 25: 21.75 of 27 attempts per read counted).
   */
  sideBySide?: boolean;
  /**
   * Run a scenario's variants that are each sized from their own capacity
   * (`sizedPerVariant`: overload, metastable) two at a time, each on its own
   * half of the cores: its platform, its database and its load processes
   * pinned there (test-support, cpu-affinity.ts). Each measures its capacity on its own
   * cores and is offered fractions of it, so the two share no core and
   * nothing they measure, as two machines would; the pair takes the time of
   * one run, and each run's half-machine capacity halves its requests. On a
   * machine without two cores (or without taskset) they run one at a time,
   * as without it. For npm test (test/storm-lab.test.ts); `npm run storm`
   * runs them one after the other on every core.
   */
  splitCores?: boolean;
  log(line: string): void;
}

export interface PlannedRun {
  scenario: Scenario;
  variant: Variant;
  repetition: number;
  /** Expected wall time, ms (schedule plus the measured overhead of a run). */
  estimateMs: number;
}

/** Start, warm-up, readiness of the load process, users leaving, settling and stopping: per run, on 2 otherwise idle cores (a busy machine is slower; the progress line re-estimates from the pace). */
const overheadMs = { full: 12_500, quick: 13_000 };
/** A naive retry storm keeps the platform busy after its users have left; the run waits for it (see run-scenario.ts). */
const naiveSettleMs = { full: 20_000, quick: 8_000 };
const capacityMs = { full: 3500, quick: 3000 };
/** The open-loop staircase (lab/capacity.ts) until the stack falls behind, its last tries and the quiet after them: typical, on 2 cores. */
const staircaseMs = 12_000;
/** Of overheadMs: the platform's start. */
const platformStartMs = 4000;

/** The variants a scenario runs: both profiles; for the full outage also the platform without breakers (its retry budget alone); plus the ablations. */
export function variantsFor(scenario: Scenario, opts: Pick<StormOptions, "profiles" | "ablation">): Variant[] {
  // The platform first: the first run of a repetition measures the capacity every rate is a
  // fraction of, and it is the platform's (the product's) capacity that the stories are sized from.
  const list: Variant[] = scenario.attribution ? [platform, platformNoBreakers, naive] : [platform, naive];
  if (opts.ablation) {
    for (const a of ablations) {
      if (a.scenario !== scenario.name || !a.ablated) continue;
      if (!list.some((v) => v.name === a.ablated!.name)) list.push(a.ablated);
    }
  }
  return list.filter((v) => opts.profiles.includes(v.profile) && (scenario.profiles ?? opts.profiles).includes(v.profile));
}

export function planStorm(opts: Pick<StormOptions, "scenarios" | "profiles" | "ablation" | "repeat" | "quick" | "capacity">): PlannedRun[] {
  const mode = opts.quick ? "quick" : "full";
  const runs: PlannedRun[] = [];
  for (let repetition = 1; repetition <= opts.repeat; repetition++) {
    for (const scenario of opts.scenarios) {
      for (const variant of variantsFor(scenario, opts)) {
        const t = timingOf(scenario, variant.profile, opts.quick);
        let estimateMs = t.preMs + t.triggerMs + t.postMs + overheadMs[mode];
        if (scenario.attribution && variant.profile === "naive") estimateMs += naiveSettleMs[mode];
        if (
          opts.capacity === undefined &&
          !hasFixedRates(scenario, opts.quick) &&
          (runs.length === 0 || runs.at(-1)!.scenario !== scenario || runs.at(-1)!.repetition !== repetition || scenario.sizedPerVariant)
        ) {
          estimateMs += capacityMs[mode];
          if (scenario.capacityFrom === "open-loop") estimateMs += staircaseMs;
        }
        runs.push({ scenario, variant, repetition, estimateMs });
      }
    }
  }
  return runs;
}

/** Resolves every caller's promise once `parties` calls have been made. */
function barrier(parties: number): () => Promise<void> {
  let arrived = 0;
  let open: () => void = () => {};
  const opened = new Promise<void>((resolve) => (open = resolve));
  return () => {
    if (++arrived >= parties) open();
    return opened;
  };
}

/** `done` resolves once `arrive` has been called `parties` times (at once for none). */
function latch(parties: number): { arrive(): void; done: Promise<void> } {
  let left = parties;
  let open: () => void = () => {};
  const done = new Promise<void>((resolve) => (open = resolve));
  if (left <= 0) open();
  return {
    arrive() {
      if (--left === 0) open();
    },
    done,
  };
}

/** Every run to its end, even when one fails (none may outlive the storm); then the failures, logged and thrown. */
function throwFailures(runs: PlannedRun[], outcomes: PromiseSettledResult<unknown>[], log: (line: string) => void): void {
  const failures = outcomes.flatMap((o, i) => (o.status === "rejected" ? [{ run: runs[i]!, error: o.reason as unknown }] : []));
  for (const f of failures) log(`${f.run.scenario.name} / ${f.run.variant.name} failed: ${inspect(f.error)}`);
  if (failures.length > 0)
    throw new Error(`${failures.map((f) => `${f.run.scenario.name} / ${f.run.variant.name}`).join(", ")} failed`, { cause: failures[0]!.error });
}

export const formatDuration = (ms: number) => {
  const s = Math.max(0, Math.round(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
};

/** The plan as it will run: side by side, then steps of one run or (split cores) a pair; with the estimated total. */
export function scheduleStorm(opts: Pick<StormOptions, "scenarios" | "profiles" | "ablation" | "repeat" | "quick" | "capacity" | "sideBySide" | "splitCores">) {
  const plan = planStorm(opts);
  const together = opts.sideBySide ? plan.filter((r) => hasFixedRates(r.scenario, opts.quick)) : [];
  const calm = together.filter((r) => r.variant.profile === "platform");
  const stormy = together.filter((r) => r.variant.profile !== "platform");
  // A stormy run waits for the calm runs (less the platform start they share).
  const calmMs = Math.max(0, ...calm.map((r) => r.estimateMs));
  const togetherMs = Math.max(0, ...together.map((r) => r.estimateMs + (stormy.includes(r) ? calmMs - platformStartMs : 0)));
  const oneByOne = plan.filter((r) => !together.includes(r));
  const halves = opts.splitCores ? coreHalves() : undefined;
  // Steps: one run, or (split cores) two variants of one scenario, each sized from its own capacity, at once.
  const steps: PlannedRun[][] = [];
  for (const run of oneByOne) {
    const last = steps.at(-1);
    const pairs =
      halves !== undefined &&
      run.scenario.sizedPerVariant === true &&
      last?.length === 1 &&
      last[0]!.scenario === run.scenario &&
      last[0]!.repetition === run.repetition;
    if (pairs) last.push(run);
    else steps.push([run]);
  }
  // A pinned run warms up longer.
  const pinnedExtraMs = warmupMs(opts.quick, true) - warmupMs(opts.quick, false);
  for (const r of steps.filter((step) => step.length > 1).flat()) r.estimateMs += pinnedExtraMs;
  const totalMs = steps.reduce((s, step) => s + stepMs(step), 0) + togetherMs;
  return { plan, together, calm, stormy, togetherMs, steps, halves, totalMs };
}

/** A step's expected wall time: its longest run (a pair runs at once). */
function stepMs(step: PlannedRun[]): number {
  return Math.max(...step.map((r) => r.estimateMs));
}

/**
 * Runs the plan, each run on a fresh platform, one after the other. Every
 * variant of a scenario offers the same rates: fractions of one reference
 * capacity, measured at the start of the scenario (or given), so that the
 * variants differ in nothing but their configuration. Prints a counter and
 * the time left, re-estimated from the runs so far.
 */
export async function runStorm(opts: StormOptions): Promise<RunResult[]> {
  const { plan, together, calm, stormy, togetherMs, steps, halves, totalMs: total } = scheduleStorm(opts);
  const results = new Map<PlannedRun, RunResult>();
  if (opts.splitCores && halves === undefined)
    opts.log("split cores: this machine cannot give two runs cores of their own (fewer than 2 cores, or no taskset); one run at a time");
  opts.log(`${plan.length} runs, estimated ${formatDuration(total)} (m:ss)`);
  const started = performance.now();
  const runOne = async (run: PlannedRun, reference: number | undefined, sideBySide?: Pick<RunOptions, "platformsReady" | "loadNotBefore" | "cpus">) => {
    const raw = await runScenario(run.scenario, run.variant, {
      quick: opts.quick,
      clientTimeoutMs: opts.clientTimeoutMs,
      ...(reference !== undefined ? { referenceCapacity: reference } : {}),
      measureCapacity: opts.measureEachRun || reference === undefined,
      failover: opts.failover,
      ...(opts.user ? { user: opts.user } : {}),
      ...(opts.from ? { from: opts.from } : {}),
      ...sideBySide,
      log: opts.log,
    });
    results.set(run, { ...analyze(raw), repetition: run.repetition });
    return raw;
  };
  if (together.length > 0) {
    const name = (r: PlannedRun) => `${r.scenario.name} / ${r.variant.name}`;
    const after = stormy.length > 0 ? `; then ${stormy.map(name).join(", ")} (its platform started with theirs)` : "";
    opts.log(`${calm.map(name).join(", ")}: side by side (fixed rates)${after}`);
    // Every run to its end, even when one fails: none may outlive the storm.
    const platformsReady = barrier(together.length);
    const calmDone = latch(calm.length);
    const outcomes = await Promise.allSettled(
      together.map((run) =>
        stormy.includes(run)
          ? runOne(run, undefined, { platformsReady, loadNotBefore: calmDone.done })
          : runOne(run, undefined, { platformsReady }).finally(() => calmDone.arrive()),
      ),
    );
    throwFailures(together, outcomes, opts.log);
  }
  let estimatedDone = togetherMs;
  let reference = opts.capacity;
  let current: PlannedRun | undefined;
  let counted = together.length;
  for (const step of steps) {
    const run = step[0]!;
    // Each scenario measures the capacity at its start, in its first run (the platform's), and
    // every variant of it uses that number: measured seconds, not minutes, before it is used,
    // so that what the machine can do (others may be using it) has little time to change.
    if (current === undefined || current.scenario !== run.scenario || current.repetition !== run.repetition || run.scenario.sizedPerVariant)
      reference = opts.capacity;
    current = run;
    const elapsed = performance.now() - started;
    // Scale what is left by how the estimate has held so far (a busy machine runs slower than planned).
    const pace = estimatedDone > 0 ? elapsed / estimatedDone : 1;
    const left = (total - estimatedDone) * pace;
    const rep = opts.repeat > 1 ? ` repetition ${run.repetition}/${opts.repeat}` : "";
    const numbers = step.map((_, j) => counted + j + 1).join(",");
    const split = step.length > 1 ? `, at once, on cores ${halves!.slice(0, step.length).join(" and ")}` : "";
    opts.log(
      `[${numbers}/${plan.length}] ${run.scenario.name} / ${step.map((r) => r.variant.name).join(" and ")}${opts.quick ? " (quick)" : ""}${rep}${split}; elapsed ${formatDuration(elapsed)}, about ${formatDuration(left)} left`,
    );
    counted += step.length;
    if (step.length > 1) {
      // Each sized from its own capacity (only such runs pair): no reference passes between them.
      const outcomes = await Promise.allSettled(step.map((r, j) => runOne(r, reference, { cpus: halves![j]! })));
      throwFailures(step, outcomes, opts.log);
    } else {
      const raw = await runOne(run, reference);
      // A fixed-rate run (not side by side) sizes nothing: the next run measures.
      if (!hasFixedRates(run.scenario, opts.quick)) reference ??= raw.capacity.referencePerSec;
    }
    estimatedDone += stepMs(step);
  }
  opts.log(`done in ${formatDuration(performance.now() - started)} (estimated ${formatDuration(total)})`);
  // In the plan's order, whichever ran first.
  return plan.map((run) => results.get(run)!);
}
