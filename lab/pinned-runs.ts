/**
 * Storm lab runs at once, each on its own share of the machine's cores.
 *
 * A run that sizes its load from the capacity it measures (the metastable
 * spike: 0.6x, 2x, 0.6x of it) cannot share cores with another run: the
 * other's work would change what it measures and starve its recovery. Given
 * cores of its own it can: each run goes in a process started under
 * `taskset -c <its CPUs>`, and everything that process starts (the
 * platform's services, PostgreSQL, the load process) inherits those CPUs.
 * Each run then measures the capacity of its share and offers load relative
 * to it, so its claims (ratios within the run) are what they are on a
 * machine of that many cores, and two runs take the wall time of one.
 *
 * Linux only (`Cpus_allowed_list`, util-linux's taskset); elsewhere, or with
 * fewer CPUs than runs, `coreShares` answers undefined and the caller runs
 * them one at a time.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { deserialize } from "node:v8";
import type { RunResult } from "./analyze.js";
import type { RunOptions } from "./run-scenario.js";
import type { Variant } from "./variants.js";

/** What a pinned process needs to run one scenario's variant (the scenario by name: it holds functions). */
export interface PinnedJob {
  scenario: string;
  variant: Variant;
  options: Pick<RunOptions, "quick" | "clientTimeoutMs" | "failover" | "from" | "user">;
}

const entry = fileURLToPath(new URL("./pinned-run-entry.ts", import.meta.url));

/** "0-1,4,6-7" -> [0, 1, 4, 6, 7]. */
export function parseCpuList(list: string): number[] {
  const cpus: number[] = [];
  for (const part of list.trim().split(",")) {
    if (part === "") continue;
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) throw new Error(`not a CPU list: "${list}"`);
    const from = Number(m[1]);
    const to = m[2] === undefined ? from : Number(m[2]);
    for (let c = from; c <= to; c++) cpus.push(c);
  }
  return cpus;
}

/**
 * This process's CPUs split into `parts` disjoint, equal shares (the rest
 * left out), as taskset lists; undefined where that cannot be done here.
 */
export function coreShares(parts: number, status = readStatus()): string[] | undefined {
  const line = status?.split("\n").find((l) => l.startsWith("Cpus_allowed_list:"));
  if (line === undefined || parts < 1) return undefined;
  const cpus = parseCpuList(line.slice("Cpus_allowed_list:".length));
  const each = Math.floor(cpus.length / parts);
  if (each < 1 || !hasTaskset()) return undefined;
  return Array.from({ length: parts }, (_, i) => cpus.slice(i * each, (i + 1) * each).join(","));
}

function readStatus(): string | undefined {
  try {
    return readFileSync("/proc/self/status", "utf8");
  } catch {
    return undefined;
  }
}

let taskset: boolean | undefined;
function hasTaskset(): boolean {
  taskset ??= spawnSync("taskset", ["--version"], { stdio: "ignore" }).status === 0;
  return taskset;
}

/**
 * Runs `job` in a process of its own on `cpus` (a taskset list) and
 * resolves with its analysed result; its log lines go to `log`. Rejects
 * with the process's own error when the run fails.
 */
export async function runPinned(job: PinnedJob, cpus: string, log: (line: string) => void): Promise<RunResult> {
  const dir = mkdtempSync(join(tmpdir(), "storm-pinned-"));
  const out = join(dir, "result");
  try {
    const child = spawn("taskset", ["-c", cpus, process.execPath, "--import", "tsx", entry, JSON.stringify(job), out], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    const lines = (stream: NodeJS.ReadableStream, prefix: string) => createInterface({ input: stream }).on("line", (l) => log(`${prefix}${l}`));
    lines(child.stdout, "");
    const stderr: string[] = [];
    createInterface({ input: child.stderr }).on("line", (l) => {
      stderr.push(l);
      if (stderr.length > 40) stderr.shift();
    });
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once("error", reject);
      child.once("close", (c) => resolve(c));
    });
    if (code !== 0) throw new Error(`${job.scenario} / ${job.variant.name} on CPUs ${cpus} exited with ${code}:\n${stderr.join("\n")}`);
    // v8's format keeps what JSON would not (NaN, Infinity, undefined).
    return deserialize(readFileSync(out)) as RunResult;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
