import type { EffectiveConfig } from "@platform/runtime";
import { buildCallGraph, type CallGraph, type Hop } from "../call-graph.js";
import { locate, variablePrefix } from "../locate.js";
import type { Target } from "../model.js";
import { difference, quantile, readHistograms, type Histogram } from "./histograms.js";
import type { PoolSamples } from "./pool-samples.js";

/** One service's operator port read at one moment. */
export interface Scrape {
  adminUrl: string;
  config: EffectiveConfig;
  metrics: string;
}

export async function scrape(adminUrls: string[]): Promise<Scrape[]> {
  return Promise.all(
    adminUrls.map(async (raw) => {
      const adminUrl = raw.replace(/\/+$/, "");
      const get = async (path: string) => {
        const res = await fetch(`${adminUrl}${path}`, { signal: AbortSignal.timeout(5000) });
        if (!res.ok) throw new Error(`${adminUrl}${path} answered ${res.status}: is this a service's operator port?`);
        return res;
      };
      return { adminUrl, config: (await (await get("/admin/config")).json()) as EffectiveConfig, metrics: await (await get("/metrics")).text() };
    }),
  );
}

/** Room over the average for bursts and slow moments: concurrency = arrival rate x latency x this (README "Configuration and sizing"). */
export const concurrencyHeadroom = 4;
/** p99.9 from fewer calls than this is the slowest call seen, not a quantile. */
export const callsForP999 = 1000;

export interface MethodLatency {
  procedure: string;
  calls: number;
  perSecond: number;
  meanMs: number;
  p50Ms: number | undefined;
  p999Ms: number | undefined;
}

export interface HopAdvice {
  hop: string;
  methods: MethodLatency[];
  /** Variables to set on the caller, with the proposed value and how the current one compares. */
  settings: { variable: string; proposed: number; current: number; verdict: string; where: string }[];
  notes: string[];
}

export interface Advice {
  seconds: number;
  hops: HopAdvice[];
  edge: { service: string; variable: string; proposed: number; current: number; verdict: string; where: string }[];
  notes: string[];
}

function verdict(current: number, proposed: number): string {
  if (current < proposed) return `tighter than measured (${current} < ${proposed})`;
  if (current > 2 * proposed) return `looser than measured (${current} > 2 x ${proposed})`;
  return `within 2x of measured (${current} vs ${proposed})`;
}

const ms = (s: number | undefined) => (s === undefined ? undefined : Math.round(s * 10_000) / 10);

/**
 * Proposals from what the services measured between two scrapes
 * (`seconds` apart, under real or generated load), per dependency of each
 * service: bulkhead concurrency = arrival rate x mean latency x headroom;
 * queue = tolerable wait (the caller's ADMISSION_MAX_QUEUE_WAIT_MS) x
 * throughput; and at the edge the default deadline from the p99.9 measured
 * there plus each hop's reserve below, and the retries seen against the
 * retry budget. Each compared with the setting in force.
 */
export function advise(before: Scrape[], after: Scrape[], seconds: number, pools: PoolSamples = new Map()): Advice {
  const target: Target = {
    name: "live",
    origin: "",
    services: after.map((s) => ({
      name: s.config.service,
      config: s.config.config,
      wired: s.config.dependencyClients,
      env: {},
      defaultsFile: "",
      adminUrl: s.adminUrl,
    })),
    refused: [],
  };
  const graph = buildCallGraph(target);
  const hops: HopAdvice[] = [];
  const edge: Advice["edge"] = [];
  const notes: string[] = [];
  for (const h of graph.hops) {
    const a = after.find((s) => s.config.service === h.caller.name)!;
    const b = before.find((s) => s.config.service === h.caller.name);
    const now = readHistograms(a.metrics, "rpc_client_duration_seconds");
    const then = b ? readHistograms(b.metrics, "rpc_client_duration_seconds") : new Map<string, Histogram>();
    const methods: MethodLatency[] = [];
    for (const [key, hist] of now) {
      if (hist.labels["dependency"] !== h.dependency.name) continue;
      const d = difference(hist, then.get(key));
      if (d.count <= 0) continue;
      methods.push({
        procedure: hist.labels["procedure"] ?? "?",
        calls: d.count,
        perSecond: d.count / seconds,
        meanMs: (d.sum / d.count) * 1000,
        p50Ms: ms(quantile(d, 0.5)),
        p999Ms: ms(quantile(d, 0.999)),
      });
    }
    const advice: HopAdvice = { hop: `${h.caller.name} -> ${h.callee?.name ?? h.dependency.name}`, methods, settings: [], notes: [] };
    hops.push(advice);
    if (methods.length === 0) {
      advice.notes.push("no calls measured in the period: nothing to propose");
      continue;
    }
    const prefix = variablePrefix(h.dependency.name);
    const bulkhead = h.dependency.bulkhead;
    const wait = (h.caller.admission?.maxQueueWaitMs ?? 500) / 1000;
    const concurrency = Math.max(1, ...methods.map((m) => Math.ceil(m.perSecond * (m.meanMs / 1000) * concurrencyHeadroom)));
    const queue = Math.max(1, ...methods.map((m) => Math.ceil(wait * m.perSecond)));
    if (bulkhead) {
      advice.settings.push({
        variable: `${prefix}_MAX_CONCURRENT`,
        proposed: concurrency,
        current: bulkhead.maxConcurrent,
        verdict: verdict(bulkhead.maxConcurrent, concurrency),
        where: locate(graph, h.caller.name, `${prefix}_MAX_CONCURRENT`),
      });
      advice.settings.push({
        variable: `${prefix}_MAX_QUEUE`,
        proposed: queue,
        current: bulkhead.maxQueue,
        verdict: verdict(bulkhead.maxQueue, queue),
        where: locate(graph, h.caller.name, `${prefix}_MAX_QUEUE`),
      });
    }
    const thin = methods.filter((m) => m.calls < callsForP999);
    if (thin.length > 0)
      advice.notes.push(
        `p99.9 from fewer than ${callsForP999} calls (${thin.map((m) => `${shortName(m.procedure)} ${m.calls}`).join(", ")}): it is the slowest call seen, not a quantile; measure longer`,
      );
    if (h.caller.edge) edgeDeadline(graph, h, methods, edge);
    else {
      const budget = budgetAt(graph, h);
      for (const m of methods) {
        if (m.p999Ms !== undefined && budget !== undefined && m.p999Ms > budget) {
          advice.notes.push(`${shortName(m.procedure)}: p99.9 ${m.p999Ms} ms does not fit the ${budget} ms a request without a deadline has left at this hop`);
        }
      }
    }
  }
  for (const s of graph.services.filter((x) => x.database)) {
    const samples = pools.get(s.name) ?? [];
    if (samples.length === 0) continue;
    const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
    const peak = Math.max(...samples);
    // Never below a peak actually seen: the pool held that many at once.
    const proposed = Math.max(1, peak, Math.ceil(mean * concurrencyHeadroom));
    const current = s.database!.poolMax ?? 0;
    const full = peak >= current ? "; the pool was full at least once, so demand may have been higher: see db_pool_wait_seconds" : "";
    hops.push({
      hop: `${s.name} -> database`,
      methods: [],
      settings: [{ variable: "DB_POOL_MAX", proposed, current, verdict: verdict(current, proposed), where: locate(graph, s.name, "DB_POOL_MAX") }],
      notes: [
        `connections in use, sampled each second: mean ${mean.toFixed(1)}, peak ${peak} of ${current}${full} (pool = mean in use x ${concurrencyHeadroom}, at least the peak; replicas x DB_POOL_MAX must stay below max_connections, docs/scaling.md)`,
      ],
    });
  }
  for (const e of graph.edges) retryShare(before, after, e.name, edge, notes);
  return { seconds, hops, edge, notes };
}

/**
 * The edge's default deadline: for its slowest method, the p99.9 measured
 * at the edge (which holds every hop below), the reserve each hop below
 * keeps back, and room for one retry at the median after the first backoff
 * (a deadline of exactly p99.9 would leave the retry layer nothing).
 */
function edgeDeadline(graph: CallGraph, h: Hop, methods: MethodLatency[], out: Advice["edge"]): void {
  const below = h.callee ? depthBelow(graph, h.callee.name) : 0;
  const retry = h.dependency.retry;
  const retryRoom = (m: MethodLatency) => (retry.maxAttempts > 1 ? (m.p50Ms ?? 0) + (retry.backoff?.initialMs ?? 0) : 0);
  const need = Math.max(...methods.map((m) => (m.p999Ms ?? 0) + below * h.caller.deadline.hopReserveMs + retryRoom(m)));
  const proposed = Math.ceil(need / 10) * 10;
  out.push({
    service: h.caller.name,
    variable: "DEADLINE_DEFAULT_MS",
    proposed,
    current: h.caller.deadline.defaultMs,
    verdict: `${verdict(h.caller.deadline.defaultMs, proposed)}; slowest p99.9 + ${below} x ${h.caller.deadline.hopReserveMs} ms reserve + one retry at p50 after ${retry.backoff?.initialMs ?? 0} ms`,
    where: locate(graph, h.caller.name, "DEADLINE_DEFAULT_MS"),
  });
}

function depthBelow(graph: CallGraph, service: string, seen: string[] = []): number {
  const next = graph.hops.filter((x) => x.caller.name === service && x.callee && !seen.includes(x.callee.name));
  return next.length === 0 ? 0 : 1 + Math.max(...next.map((x) => depthBelow(graph, x.callee!.name, [...seen, service])));
}

/** What a request given the edge's default deadline has left when `h`'s caller calls out (reserves only; time spent above comes off too). */
function budgetAt(graph: CallGraph, h: Hop): number | undefined {
  const edge = graph.edges[0];
  if (edge === undefined) return undefined;
  const depth = (name: string, seen: string[] = []): number | undefined => {
    if (name === edge.name) return 0;
    const callers = graph.hops.filter((x) => x.callee?.name === name && !seen.includes(x.caller.name));
    const ds = callers.map((x) => depth(x.caller.name, [...seen, name])).filter((d): d is number => d !== undefined);
    return ds.length === 0 ? undefined : Math.max(...ds) + 1;
  };
  const d = depth(h.caller.name);
  return d === undefined ? undefined : edge.deadline.defaultMs - (d + 1) * edge.deadline.hopReserveMs;
}

function counter(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum += Number(m[3]);
  }
  return sum;
}

/** Retries as a share of the edge's requests in the period, against its budget. */
function retryShare(before: Scrape[], after: Scrape[], edgeName: string, out: Advice["edge"], notes: string[]): void {
  const a = after.find((s) => s.config.service === edgeName)!.metrics;
  const b = before.find((s) => s.config.service === edgeName)?.metrics ?? "";
  const delta = (name: string, labels?: Record<string, string>) => counter(a, name, labels) - counter(b, name, labels);
  const requests = delta("retry_attempts_per_request_count");
  const retries = delta("retry_retries_total");
  const refused = delta("retry_refused_total", { reason: "budget_exhausted" });
  if (requests <= 0) return;
  const share = retries / requests;
  const budget = after.find((s) => s.config.service === edgeName)!.config.dependencyClients.find((c) => c.retry !== "none")?.retry;
  const current = budget && budget !== "none" ? budget.budget.percentCanRetry : 0;
  // A healthy system retries almost nothing: the budget is for bad moments,
  // and 10 % keeps a total failure at 1.1x the load (docs/audit.md).
  const proposed = Math.min(0.2, Math.max(0.1, Math.ceil(share * 20) / 20));
  out.push({
    service: edgeName,
    variable: "RETRY_BUDGET_PERCENT",
    proposed,
    current,
    verdict: `${verdict(current, proposed)}; measured: ${retries} retries for ${requests} requests (${(share * 100).toFixed(1)} %), ${refused} refused by the budget`,
    where: `RETRY_BUDGET_PERCENT of ${edgeName}`,
  });
  if (share > 0.1)
    notes.push(`${edgeName} retried ${(share * 100).toFixed(1)} % of its requests in the period: something below is failing, a budget raise would hide it`);
}

function shortName(procedure: string): string {
  return procedure.split("/").at(-1) ?? procedure;
}

export function formatAdvice(a: Advice): string {
  const out = [`== advice from ${a.seconds} s of measurements`];
  for (const h of a.hops) {
    out.push(h.hop);
    for (const m of h.methods) {
      out.push(
        `    ${shortName(m.procedure)}: ${m.calls} calls (${m.perSecond.toFixed(1)}/s), mean ${m.meanMs.toFixed(1)} ms, p50 ${m.p50Ms ?? "-"} ms, p99.9 ${m.p999Ms ?? "-"} ms`,
      );
    }
    for (const s of h.settings) out.push(`    ${s.variable}=${s.proposed}: current ${s.current}, ${s.verdict}`);
    for (const n of h.notes) out.push(`    note: ${n}`);
  }
  for (const service of new Set(a.edge.map((s) => s.service))) {
    out.push(`${service} (the edge)`);
    for (const s of a.edge.filter((x) => x.service === service)) out.push(`    ${s.variable}=${s.proposed}: current ${s.current}, ${s.verdict}`);
  }
  for (const n of a.notes) out.push(`note: ${n}`);
  const set = new Map<string, string[]>();
  for (const h of a.hops) {
    const caller = h.hop.split(" -> ")[0]!;
    for (const s of h.settings) set.set(caller, [...(set.get(caller) ?? []), `${s.variable}=${s.proposed}`]);
  }
  for (const s of a.edge) set.set(s.service, [...(set.get(s.service) ?? []), `${s.variable}=${s.proposed}`]);
  out.push("environment to set (per process; docs/scaling.md for replicas):");
  for (const [service, vars] of set) out.push(`    ${service}: ${vars.join(" ")}`);
  out.push(
    "The bulkhead numbers size for the load measured, not for a peak: the shipped maxima are sized for saturation and the funnel between hops (docs/isolation.md), and the adaptive limit already follows latency below them. Lower a maximum only from measurements at your peak.",
  );
  return out.join("\n");
}
