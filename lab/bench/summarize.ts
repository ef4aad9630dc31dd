/**
 * Raw legs -> the bench's numbers. Ratios are platform/plain: throughput
 * ratios are the median over rounds of legs run back to back (paired, so
 * slow drift cancels); latency percentiles pool every round's samples.
 */
import { median, percentile, sum } from "../stats.js";
import {
  countedServices,
  gatewayCellId,
  hopCellId,
  hopPathEntries,
  methods,
  type CountedService,
  type HopPath,
  type Method,
  type Service,
  type System,
} from "./cells.js";
import { protocols, type Protocol } from "./leg.js";
import { ceilingCellId, type BenchRun, type LegRecord } from "./run-bench.js";
import type { Memory } from "./proc-stats.js";

export interface SideStats {
  perSec: number;
  p50Ms: number;
  p99Ms: number;
  failed: number;
  /** A message for each failure code seen (the first one). */
  failureSamples: Record<string, string>;
  requests: number;
  /** CPU ms per successful request, by process. */
  cpuMsPerRequest: Partial<Record<CountedService | "postgres", number>>;
  /**
   * Receipts left pending in the chain's outbox when its legs' load stopped, per successful request
   * (run-bench.ts `receiptsQueuedAtEnd`): the share of the orders whose receipt work the
   * throughput did not pay for. NaN when the legs did not count it.
   */
  receiptsQueuedPerRequest: number;
}

export interface CellSummary {
  id: string;
  method?: Method;
  protocol: Protocol;
  concurrency: number;
  platform: SideStats;
  plain: SideStats;
  /** platform/plain throughput, median over rounds of paired legs. */
  throughputRatio: number;
  perRoundRatios: number[];
  /** platform/plain p50 latency. */
  p50Ratio: number;
}

export interface HopSummary {
  /** Whose path (cells.ts hopPaths). */
  path: HopPath;
  service: Service;
  operation: string;
  platformP50Ms: number;
  plainP50Ms: number;
  /** platform - plain at this hop (everything below included). */
  gapMs: number;
  /** This hop's own share: its gap minus the gap of the hop it calls. */
  addedMs: number;
}

export interface CeilingSummary {
  concurrency: number;
  perSec: number;
  /** PlaceOrder through the gateway over gRPC at the same concurrency, as a fraction of the database alone. */
  platformShare: number;
  plainShare: number;
}

/** gRPC h2c latency / Connect JSON HTTP/1.1 latency at one client through the gateway, median over rounds (both from the same leg). */
export interface ProtocolRatios {
  p50: number;
  /**
   * The fastest quarter: other processes on the machine only ever add
   * latency, so the low percentiles show what the path itself costs (a
   * stall on every request, like Nagle's 40 ms, stays in them; contention
   * mostly does not). test/bench.test.ts checks this one.
   */
  p25: number;
}

export interface ProtocolSummary {
  method: Method;
  platform: ProtocolRatios;
  plain: ProtocolRatios;
}

export interface BenchSummary {
  cells: CellSummary[];
  hops: HopSummary[];
  ceiling: CeilingSummary[];
  protocols: ProtocolSummary[];
  memory: BenchRun["memory"];
  concurrency: number;
  /** Cores' worth of CPU that other processes on the machine used while legs ran (0 = the bench had the machine to itself). */
  foreignCores: number;
}

const rate = (l: LegRecord) => (l.elapsedMs > 0 ? (l.succeeded / l.elapsedMs) * 1000 : 0);

function side(legs: LegRecord[]): SideStats {
  const requests = sum(legs.map((l) => l.succeeded));
  const latencies = legs.flatMap((l) => l.latenciesMs);
  const cpuMsPerRequest: SideStats["cpuMsPerRequest"] = {};
  for (const k of [...countedServices, "postgres"] as const) {
    const total = sum(legs.map((l) => l.cpuMs[k] ?? 0));
    if (legs.some((l) => l.cpuMs[k] !== undefined)) cpuMsPerRequest[k] = requests > 0 ? total / requests : Number.NaN;
  }
  return {
    perSec: (requests / sum(legs.map((l) => l.elapsedMs))) * 1000,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    failed: sum(legs.flatMap((l) => Object.values(l.failed))),
    failureSamples: Object.assign({}, ...[...legs].reverse().map((l) => l.failureSamples)) as Record<string, string>,
    requests,
    cpuMsPerRequest,
    receiptsQueuedPerRequest:
      requests > 0 && legs.every((l) => l.receiptsQueuedAtEnd !== undefined) ? sum(legs.map((l) => l.receiptsQueuedAtEnd ?? 0)) / requests : Number.NaN,
  };
}

export function summarize(run: BenchRun): BenchSummary {
  const legsOf = (cellId: string, system: System | "db") => run.legs.filter((l) => l.cellId === cellId && l.system === system);
  const cells: CellSummary[] = run.cells.map((cell) => {
    const p = legsOf(cell.id, "platform");
    const b = legsOf(cell.id, "plain");
    const perRoundRatios = p.map((l) => {
      const partner = b.find((x) => x.round === l.round);
      return partner ? rate(l) / rate(partner) : Number.NaN;
    });
    const platform = side(p);
    const plain = side(b);
    return {
      id: cell.id,
      ...(cell.method ? { method: cell.method } : {}),
      protocol: cell.protocol,
      concurrency: cell.concurrency,
      platform,
      plain,
      throughputRatio: median(perRoundRatios.filter(Number.isFinite)),
      perRoundRatios,
      p50Ratio: platform.p50Ms / plain.p50Ms,
    };
  });
  const cell = (id: string) => cells.find((c) => c.id === id);

  const hops: HopSummary[] = [];
  for (const [path, pathHops] of hopPathEntries) {
    let innerGap = 0;
    for (const [service, operation] of pathHops) {
      const c = cell(hopCellId(service, operation));
      if (!c) continue;
      const gapMs = c.platform.p50Ms - c.plain.p50Ms;
      hops.push({ path, service, operation, platformP50Ms: c.platform.p50Ms, plainP50Ms: c.plain.p50Ms, gapMs, addedMs: gapMs - innerGap });
      innerGap = gapMs;
    }
  }

  const ceiling: CeilingSummary[] = [];
  for (const concurrency of [1, run.options.concurrency]) {
    const legs = legsOf(ceilingCellId(concurrency), "db");
    if (legs.length === 0) continue;
    const perSec = side(legs).perSec;
    const order = cell(gatewayCellId("PlaceOrder", "grpc-h2c", concurrency));
    ceiling.push({
      concurrency,
      perSec,
      platformShare: (order?.platform.perSec ?? Number.NaN) / perSec,
      plainShare: (order?.plain.perSec ?? Number.NaN) / perSec,
    });
  }

  const protocolRatio = (method: Method, system: System, p: number) => {
    const [h2c, http1] = protocols.map((protocol) => legsOf(gatewayCellId(method, protocol, 1), system));
    const perRound = (h2c ?? []).map((l) => {
      const partner = http1?.find((x) => x.round === l.round);
      return partner ? percentile(l.latenciesMs, p) / percentile(partner.latenciesMs, p) : Number.NaN;
    });
    return median(perRound.filter(Number.isFinite));
  };
  const ratios = (method: Method, system: System): ProtocolRatios => ({ p50: protocolRatio(method, system, 50), p25: protocolRatio(method, system, 25) });
  const protocolRatios: ProtocolSummary[] = methods.map((method) => ({ method, platform: ratios(method, "platform"), plain: ratios(method, "plain") }));

  const measured = run.legs.filter((l) => l.round > 0);
  return {
    cells,
    hops,
    ceiling,
    protocols: protocolRatios,
    memory: run.memory as Record<System, Partial<Record<CountedService, Memory>>>,
    concurrency: run.options.concurrency,
    foreignCores: sum(measured.map((l) => l.foreignCpuMs)) / sum(measured.map((l) => l.elapsedMs)),
  };
}
