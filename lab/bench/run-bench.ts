/**
 * One bench run: both chains up, a warm-up pass, then rounds in which
 * every cell runs on the platform and on the plain chain back to back (the
 * first of the pair alternates from cell to cell and round to round, so
 * drift and neighbours' noise fall on both), plus the database alone as
 * the ceiling. Returns raw legs; summarize.ts turns them into ratios.
 */
import { benchCells, hopOrder, type Cell, type Service, type System } from "./cells.js";
import type { LegResult, LegSpec } from "./leg.js";
import { LoadWorker } from "./load-worker-client.js";
import { ProcessTreeCpu, cpuMs, machineBusyMs, memory, type Memory } from "./proc-stats.js";
import { startSystems, type Systems } from "./systems.js";

export interface BenchOptions {
  /** Length of each measured leg. */
  seconds: number;
  rounds: number;
  /** Length of each leg of the warm-up pass (JIT, pools, connections); 0 skips it. */
  warmupSeconds: number;
  /** Closed-loop users of the high-concurrency cells (h2c streams, HTTP/1.1 connections). */
  concurrency: number;
  /** Each hop of PlaceOrder's path called directly at one client. */
  hops: boolean;
  /** The database alone at 1 and `concurrency` users. */
  ceiling: boolean;
  log: (line: string) => void;
}

export type CpuSample = Partial<Record<Service | "postgres", number>>;

export interface LegRecord extends LegResult {
  round: number;
  /** "db": the ceiling, no chain. */
  system: System | "db";
  cellId: string;
  concurrency: number;
  /** CPU ms spent by each process during the leg. */
  cpuMs: CpuSample;
  /** CPU ms other processes on the machine took during the leg (noise the bench cannot remove). */
  foreignCpuMs: number;
}

export interface BenchRun {
  options: Omit<BenchOptions, "log">;
  cells: Cell[];
  legs: LegRecord[];
  /** Resident memory of every service after the last round. */
  memory: Record<System, Partial<Record<Service, Memory>>>;
  startedAt: string;
  durationSec: number;
}

export const ceilingCellId = (concurrency: number) => `db PlaceOrder statements x${concurrency}`;

const callTimeoutMs = 5000;
const maxRequestsPerLeg = 200_000;

function cpuNow(sys: Systems, postgres: ProcessTreeCpu, system: System | "db"): CpuSample {
  const sample: CpuSample = { postgres: postgres.totalMs() };
  if (system !== "db") for (const s of hopOrder) sample[s] = cpuMs(sys.pid(system, s));
  return sample;
}

/** Everything the bench runs: both chains, the database, the load worker, this process. */
function ownCpuMs(sys: Systems, postgres: ProcessTreeCpu, worker: LoadWorker): number {
  let total = postgres.totalMs() + cpuMs(worker.pid) + cpuMs(process.pid);
  for (const system of ["platform", "plain"] as const) for (const s of hopOrder) total += cpuMs(sys.pid(system, s));
  return total;
}

function cpuDelta(before: CpuSample, after: CpuSample): CpuSample {
  const d: CpuSample = {};
  for (const k of Object.keys(after) as Array<keyof CpuSample>) d[k] = (after[k] ?? 0) - (before[k] ?? 0);
  return d;
}

export async function runBench(opts: BenchOptions): Promise<BenchRun> {
  const started = Date.now();
  const cells = benchCells(opts.concurrency, opts.hops);
  const log = opts.log;
  const sys = await startSystems(log);
  const worker = LoadWorker.start();
  const postgres = new ProcessTreeCpu(sys.postgresPid);
  const legs: LegRecord[] = [];
  try {
    const leg = async (round: number, system: System | "db", cellId: string, spec: Omit<LegSpec, "durationMs" | "maxRequests" | "timeoutMs" | "label">, seconds: number) => {
      const full: LegSpec = { ...spec, durationMs: seconds * 1000, maxRequests: maxRequestsPerLeg, timeoutMs: callTimeoutMs, label: `${system}-${round}-${legs.length}` };
      await worker.prepare(full);
      const before = cpuNow(sys, postgres, system);
      const foreignBefore = machineBusyMs() - ownCpuMs(sys, postgres, worker);
      const result = await worker.go(full);
      const foreignCpuMs = Math.max(0, machineBusyMs() - ownCpuMs(sys, postgres, worker) - foreignBefore);
      const record: LegRecord = { ...result, round, system, cellId, concurrency: spec.concurrency, cpuMs: cpuDelta(before, cpuNow(sys, postgres, system)), foreignCpuMs };
      return record;
    };
    const cellLeg = (round: number, system: System, cell: Cell, seconds: number) =>
      leg(round, system, cell.id, { target: sys.target(system, cell), operation: cell.operation, concurrency: cell.concurrency }, seconds);

    if (opts.warmupSeconds > 0) {
      log(`warm-up: every cell once on both chains, ${opts.warmupSeconds} s each`);
      for (const cell of cells) for (const system of ["platform", "plain"] as const) await cellLeg(0, system, cell, opts.warmupSeconds);
    }

    for (let round = 1; round <= opts.rounds; round++) {
      log(`round ${round}/${opts.rounds}`);
      for (const [i, cell] of cells.entries()) {
        const pair: System[] = (round + i) % 2 === 0 ? ["platform", "plain"] : ["plain", "platform"];
        const done: Partial<Record<System, LegRecord>> = {};
        for (const system of pair) {
          const l = await cellLeg(round, system, cell, opts.seconds);
          legs.push(l);
          done[system] = l;
        }
        const rate = (l: LegRecord | undefined) => (l ? (l.succeeded / l.elapsedMs) * 1000 : Number.NaN);
        const failed = (l: LegRecord | undefined) => Object.values(l?.failed ?? {}).reduce((a, b) => a + b, 0);
        const f = failed(done.platform) + failed(done.plain);
        log(
          `  ${cell.id.padEnd(40)} platform ${rate(done.platform).toFixed(0).padStart(5)}/s  plain ${rate(done.plain).toFixed(0).padStart(5)}/s` +
            `  ratio ${(rate(done.platform) / rate(done.plain)).toFixed(2)}${f > 0 ? `  (${f} failed)` : ""}`,
        );
      }
      if (opts.ceiling) {
        for (const concurrency of [1, opts.concurrency]) {
          const l = await leg(round, "db", ceilingCellId(concurrency), { target: { kind: "db", databaseUrl: sys.databaseUrl }, operation: "db.PlaceOrderStatements", concurrency }, opts.seconds);
          legs.push(l);
          log(`  ${ceilingCellId(concurrency).padEnd(40)} ${((l.succeeded / l.elapsedMs) * 1000).toFixed(0).padStart(5)}/s`);
        }
      }
    }

    const mem = { platform: {}, plain: {} } as BenchRun["memory"];
    for (const system of ["platform", "plain"] as const) {
      for (const s of hopOrder) {
        const m = memory(sys.pid(system, s));
        if (m) mem[system][s] = m;
      }
    }
    const { log: _log, ...options } = opts;
    return { options, cells, legs, memory: mem, startedAt: new Date(started).toISOString(), durationSec: Math.round((Date.now() - started) / 1000) };
  } finally {
    worker.stop();
    await sys.close();
  }
}
