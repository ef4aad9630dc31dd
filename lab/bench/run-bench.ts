/**
 * One bench run: both chains up, a warm-up pass, then rounds in which
 * every measurement runs on the platform and on the plain chain back to
 * back (which goes first alternates from measurement to measurement and
 * round to round, so drift and neighbours' noise fall on both), plus the
 * database alone as the ceiling. A measurement is one cell, or the two
 * one-client protocol cells of a method alternating in one leg; a hop's
 * cell and a high-concurrency cell are one leg in which both chains take
 * turns (see cells.ts pairsChains). Returns raw legs; summarize.ts turns
 * them into ratios.
 */
import { benchMeasurements, countedServices, pairsChains, type Cell, type CountedService, type Measurement, type Method, type System } from "./cells.js";
import type { LegResult, LegSpec, TargetResult } from "./leg.js";
import { LoadWorker } from "./load-worker-client.js";
import { ProcessTreeCpu, cpuMs, machineBusyMs, memory, type Memory } from "./proc-stats.js";
import { startSystems, type Systems } from "./systems.js";
import { buildChains } from "./compiled-chains.js";

export interface BenchOptions {
  /** Length of each measured leg. */
  seconds: number;
  rounds: number;
  /** Length of each leg of the warm-up pass (JIT, pools, connections); 0 skips it. */
  warmupSeconds: number;
  /**
   * Which cells the warm-up pass runs: all of them, or only the one-client
   * protocol pairs (--quick: a pair runs its h2c block first, and on cold
   * processes that block alone paid the JIT, 3x HTTP/1.1 at p25 on a busy
   * machine; the 32-client legs come after their method's pair, already warm).
   */
  warmupCells?: "all" | "one-client";
  /** Closed-loop users of the high-concurrency cells (h2c streams, HTTP/1.1 connections). */
  concurrency: number;
  /** Each hop of PlaceOrder's path called directly at one client. */
  hops: boolean;
  /**
   * The high-concurrency cells measured on both chains in one leg, every
   * user switching chain each `sliceMs` (cells.ts pairsChains); 0: leg
   * after leg.
   */
  sliceMs: number;
  /** Only this method's cells (through the gateway, and its path's hops); all when undefined. */
  method?: Method;
  /** The database alone at 1 and `concurrency` users. */
  ceiling: boolean;
  /** The platform's LOG_LEVEL: "shipped" (its default), or e.g. "warn" to see what request logs cost. */
  platformLogLevel: string;
  /** The platform's gateway verifies a JWT on every call and keeps a quota per tenant (what authentication costs). */
  jwt?: boolean;
  /**
   * "build": both chains from compiled JavaScript, built first (what `npm
   * start` and the image run; compiled-chains.ts); "source": through tsx,
   * as the tests run (quicker to start, a little dearer per request).
   */
  from: "build" | "source";
  /** With "build": the platform's dist/ is fresh (`npm test` built it before any test file); only the plain chain is compiled. */
  platformBuilt?: boolean;
  log: (line: string) => void;
}

export type CpuSample = Partial<Record<CountedService | "postgres", number>>;
type CpuCounters = CpuSample & { postgresServer?: number };

/** One cell's part of one leg. */
export interface LegRecord extends TargetResult {
  /** Wall time of the leg, or with alternating cells the time spent in this cell's calls divided by the users, ms. */
  elapsedMs: number;
  round: number;
  /** "db": the ceiling, no chain. */
  system: System | "db";
  cellId: string;
  concurrency: number;
  /** CPU ms spent by each process during the leg. */
  cpuMs: CpuSample;
  /** CPU ms other processes on the machine took during the leg (noise the bench cannot remove). */
  foreignCpuMs: number;
  /**
   * Receipts the chain's outbox still held pending when the leg's load stopped (its drain is
   * in `cpuMs`, not in `elapsedMs`): work the leg's throughput got without paying for it yet.
   * In a leg shared by both chains, each chain's own outbox. Absent for the database ceiling.
   */
  receiptsQueuedAtEnd?: number;
}

export interface BenchRun {
  options: Omit<BenchOptions, "log">;
  cells: Cell[];
  legs: LegRecord[];
  /** Resident memory of every service after the last round. */
  memory: Record<System, Partial<Record<CountedService, Memory>>>;
  startedAt: string;
  durationSec: number;
}

export const ceilingCellId = (concurrency: number) => `db PlaceOrder statements x${concurrency}`;

const callTimeoutMs = 5000;
const maxRequestsPerLeg = 200_000;
/**
 * One-client legs go on past their duration until they have this many
 * requests (a percentile of a handful of samples is noise), for at most
 * `maxStretch` times their duration, and never less than 3 s.
 */
const minRequestsAtOneClient = 40;
const maxStretch = 4;

/**
 * The CPU counters a leg's part is charged from, for every chain of the leg
 * at one instant (PostgreSQL's process tree read once). "postgres" is the
 * backends that served the chain's database; "postgresServer" the server's
 * own processes (postmaster, checkpointer, WAL writer, the bench's
 * watchers), which no chain owns. Call after `postgres.assign()`.
 */
function cpuNow(sys: Systems, postgres: ProcessTreeCpu, systems: readonly (System | "db")[]): Map<System | "db", CpuCounters> {
  postgres.totalMs();
  return new Map(
    systems.map((system) => {
      const sample: CpuCounters = { postgres: postgres.groupMs(system), postgresServer: postgres.groupMs(undefined) };
      if (system !== "db") for (const s of countedServices) sample[s] = cpuMs(sys.pid(system, s));
      return [system, sample];
    }),
  );
}

/** Everything the bench runs: both chains, the database, the load worker, this process. */
function ownCpuMs(sys: Systems, postgres: ProcessTreeCpu, worker: LoadWorker): number {
  let total = postgres.totalMs() + cpuMs(worker.pid) + cpuMs(process.pid);
  for (const system of ["platform", "plain"] as const) for (const s of countedServices) total += cpuMs(sys.pid(system, s));
  return total;
}

/**
 * The CPU each process spent in a leg, for one part of it: `own` of the
 * part's chain's services and database backends, `shared` of the database
 * server's own processes (both chains use the server). "postgres" is the
 * two together.
 */
function cpuDelta(before: CpuCounters, after: CpuCounters, own: number, shared: number): CpuSample {
  const d: CpuSample = {};
  const delta = (k: keyof CpuCounters) => (after[k] ?? 0) - (before[k] ?? 0);
  for (const k of [...countedServices, "postgres"] as const) if (after[k] !== undefined) d[k] = delta(k) * own;
  d.postgres = (d.postgres ?? 0) + delta("postgresServer") * shared;
  return d;
}

/** One part of a leg: what it measured, on which chain (or the database alone). */
export interface LegPart {
  system: System | "db";
  cellId: string;
}

/**
 * The leg's result per part: all of it for one part; for two alternating
 * parts, each its own requests, with the leg's time split by the time
 * spent in each part's calls, and the CPU too where both ran on the same
 * processes (two cells of one chain). Where the parts ran on different
 * chains, each chain's services did only that part's work.
 */
export function splitByPart(
  result: LegResult,
  parts: readonly LegPart[],
  concurrency: number,
): Array<{ part: LegPart; result: TargetResult; elapsedMs: number; own: number; shared: number }> {
  const { alternate, elapsedMs, ...primary } = result;
  if (!alternate || parts.length < 2) return [{ part: parts[0]!, result: primary, elapsedMs, own: 1, shared: 1 }];
  // A part's time is the time its users spent in its calls: every user is always in a call (a
  // closed loop), so the parts' times add up to the leg's. With many users switching in time
  // slices this is Little's law (rate = users / mean latency): counting the requests started in a
  // slice instead would credit each user about half a request per slice whatever the latency,
  // which pulls the two chains' ratio towards 1 when a slice is only a few requests long.
  const timeOf = (r: TargetResult) => r.busyMs / concurrency;
  const total = timeOf(primary) + timeOf(alternate);
  const sameChain = parts[0]!.system === parts[1]!.system;
  return [primary, alternate].map((r, i) => {
    const share = total > 0 ? timeOf(r) / total : 0.5;
    return { part: parts[i]!, result: r, elapsedMs: timeOf(r), own: sameChain ? share : 1, shared: share };
  });
}

export async function runBench(opts: BenchOptions): Promise<BenchRun> {
  const started = Date.now();
  const measurements = benchMeasurements(opts.concurrency, opts.hops, opts.method);
  const cells = measurements.flat();
  const log = opts.log;
  const plainCompiledDir = opts.from === "build" ? buildChains(log, { platformBuilt: opts.platformBuilt === true }) : undefined;
  const sys = await startSystems(log, {
    platformLogLevel: opts.platformLogLevel,
    from: opts.from,
    jwt: opts.jwt === true,
    ...(plainCompiledDir ? { plainCompiledDir } : {}),
  });
  const worker = LoadWorker.start();
  const postgres = new ProcessTreeCpu(sys.postgresPid);
  const legs: LegRecord[] = [];
  try {
    const leg = async (
      round: number,
      parts: readonly LegPart[],
      spec: Omit<LegSpec, "durationMs" | "maxRequests" | "minRequests" | "maxDurationMs" | "timeoutMs" | "label">,
      seconds: number,
    ): Promise<LegRecord[]> => {
      const chains = [...new Set(parts.map((p) => p.system))];
      const full: LegSpec = {
        ...spec,
        durationMs: seconds * 1000,
        maxRequests: maxRequestsPerLeg,
        minRequests: spec.concurrency === 1 ? minRequestsAtOneClient : 0,
        maxDurationMs: Math.max(3000, seconds * 1000 * maxStretch),
        timeoutMs: callTimeoutMs,
        label: `${chains.join("_")}-${round}-${legs.length}`,
      };
      await worker.prepare(full);
      postgres.assign(await sys.backendChains());
      const before = cpuNow(sys, postgres, chains);
      const foreignBefore = machineBusyMs() - ownCpuMs(sys, postgres, worker);
      const result = await worker.go(full);
      const queued = new Map<System, number>();
      for (const c of chains) if (c !== "db") queued.set(c, await sys.queuedReceipts(c));
      // The receipts the leg queued are its work too: the CPU sample waits for the worker to send them,
      // and the next leg does not start with this one's backlog.
      for (const c of chains) await sys.drainReceipts(c);
      const foreignCpuMs = Math.max(0, machineBusyMs() - ownCpuMs(sys, postgres, worker) - foreignBefore);
      postgres.assign(await sys.backendChains());
      const after = cpuNow(sys, postgres, chains);
      return splitByPart(result, parts, spec.concurrency).map(({ part, result: r, elapsedMs, own, shared }) => ({
        ...r,
        elapsedMs,
        round,
        system: part.system,
        cellId: part.cellId,
        concurrency: spec.concurrency,
        cpuMs: cpuDelta(before.get(part.system)!, after.get(part.system)!, own, shared),
        foreignCpuMs: foreignCpuMs * shared,
        ...(part.system === "db" ? {} : { receiptsQueuedAtEnd: queued.get(part.system) ?? 0 }),
      }));
    };
    const measure = (round: number, system: System, m: Measurement, seconds: number) => {
      const [first, second] = m;
      const spec = {
        target: sys.target(system, first),
        ...(second ? { alternate: sys.target(system, second) } : {}),
        operation: first.operation,
        concurrency: first.concurrency,
      };
      return leg(
        round,
        m.map((c) => ({ system, cellId: c.id })),
        spec,
        seconds,
      );
    };
    /** One cell on both chains in one leg (cells.ts pairsChains), `order[0]` first; as long as the two legs it replaces. */
    const measureBothChains = (round: number, cell: Cell, order: readonly [System, System], seconds: number) =>
      leg(
        round,
        order.map((system) => ({ system, cellId: cell.id })),
        {
          target: sys.target(order[0], cell),
          alternate: sys.target(order[1], cell),
          operation: cell.operation,
          concurrency: cell.concurrency,
          // Many users: all switch chain together, so only one chain is loaded at a time.
          ...(cell.concurrency > 1 ? { sliceMs: opts.sliceMs } : {}),
        },
        seconds * 2,
      );
    const chainOrder = (n: number): readonly [System, System] => (n % 2 === 0 ? ["platform", "plain"] : ["plain", "platform"]);
    const measureOnBoth = async (round: number, m: Measurement, n: number, seconds: number): Promise<LegRecord[]> => {
      if (pairsChains(m, opts.sliceMs > 0)) return measureBothChains(round, m[0], chainOrder(n), seconds);
      const done: LegRecord[] = [];
      for (const system of chainOrder(n)) done.push(...(await measure(round, system, m, seconds)));
      return done;
    };

    if (opts.warmupSeconds > 0) {
      const oneClientOnly = opts.warmupCells === "one-client";
      log(`warm-up: every ${oneClientOnly ? "one-client pair" : "cell"} once on both chains, ${opts.warmupSeconds} s each`);
      for (const m of measurements) {
        if (oneClientOnly && m[0].concurrency !== 1) continue;
        await measureOnBoth(0, m, 0, opts.warmupSeconds);
      }
    }

    const rate = (l: LegRecord | undefined) => (l ? (l.succeeded / l.elapsedMs) * 1000 : Number.NaN);
    const failed = (l: LegRecord | undefined) => Object.values(l?.failed ?? {}).reduce((a, b) => a + b, 0);
    for (let round = 1; round <= opts.rounds; round++) {
      log(`round ${round}/${opts.rounds}`);
      for (const [i, m] of measurements.entries()) {
        const done = await measureOnBoth(round, m, round + i, opts.seconds);
        legs.push(...done);
        for (const cell of m) {
          const p = done.find((l) => l.cellId === cell.id && l.system === "platform");
          const b = done.find((l) => l.cellId === cell.id && l.system === "plain");
          const f = failed(p) + failed(b);
          log(
            `  ${cell.id.padEnd(42)} platform ${rate(p).toFixed(0).padStart(5)}/s  plain ${rate(b).toFixed(0).padStart(5)}/s` +
              `  ratio ${(rate(p) / rate(b)).toFixed(2)}${f > 0 ? `  (${f} failed)` : ""}`,
          );
        }
      }
      if (opts.ceiling) {
        for (const concurrency of [1, opts.concurrency]) {
          const ls = await leg(
            round,
            [{ system: "db", cellId: ceilingCellId(concurrency) }],
            { target: { kind: "db", databaseUrl: sys.ceilingDatabaseUrl }, operation: "db.PlaceOrderStatements", concurrency },
            opts.seconds,
          );
          legs.push(...ls);
          log(`  ${ceilingCellId(concurrency).padEnd(42)} ${rate(ls[0]).toFixed(0).padStart(5)}/s`);
        }
      }
    }

    const mem = { platform: {}, plain: {} } as BenchRun["memory"];
    for (const system of ["platform", "plain"] as const) {
      for (const s of countedServices) {
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
