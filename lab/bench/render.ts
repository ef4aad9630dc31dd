/** The bench's tables: plain text for the terminal, markdown for docs/bench/results.md. */
import { renderTable } from "../report/table.js";
import { countedServices, hopOrder, type CountedService } from "./cells.js";
import type { BenchSummary, CellSummary } from "./summarize.js";

const f = (x: number, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : "-");
const protocolName = { "grpc-h2c": "gRPC h2c", "connect-json-http1": "Connect JSON HTTP/1.1" } as const;
const clients = (c: CellSummary) => (c.concurrency === 1 ? "1" : `${c.concurrency} ${c.protocol === "grpc-h2c" ? "streams" : "conns"}`);

/** The lowest and highest ratio of a single round: how far one round's reading can be trusted. */
function roundsRange(ratios: number[]): string {
  if (ratios.length < 2) return "-";
  return `${f(Math.min(...ratios), 2)}-${f(Math.max(...ratios), 2)}`;
}

function throughputRows(s: BenchSummary): string[][] {
  const rows = [
    [
      "method",
      "protocol",
      "clients",
      "platform req/s",
      "plain req/s",
      "ratio",
      "rounds' ratios",
      "platform p50/p99 ms",
      "plain p50/p99 ms",
      "p50 ratio",
      "failed",
    ],
  ];
  for (const c of s.cells.filter((x) => x.method)) {
    rows.push([
      c.method!,
      protocolName[c.protocol],
      clients(c),
      f(c.platform.perSec, 0),
      f(c.plain.perSec, 0),
      f(c.throughputRatio, 2),
      roundsRange(c.perRoundRatios),
      `${f(c.platform.p50Ms)}/${f(c.platform.p99Ms)}`,
      `${f(c.plain.p50Ms)}/${f(c.plain.p99Ms)}`,
      f(c.p50Ratio, 2),
      `${c.platform.failed}/${c.plain.failed}`,
    ]);
  }
  return rows;
}

function hopRows(s: BenchSummary): string[][] {
  const rows = [["hop (called directly, 1 client, gRPC)", "path", "call", "platform p50 ms", "plain p50 ms", "gap ms", "added by this hop ms"]];
  for (const h of s.hops) rows.push([h.service, h.path, h.operation, f(h.platformP50Ms, 2), f(h.plainP50Ms, 2), f(h.gapMs, 2), f(h.addedMs, 2)]);
  return rows;
}

function cpuRows(s: BenchSummary): string[][] {
  const cols: Array<CountedService | "postgres"> = [...[...hopOrder].reverse(), "receipts", "mailer", "postgres"];
  const rows = [["CPU ms per request (gRPC, high concurrency)", "chain", ...cols, "receipts queued at leg end, per order"]];
  for (const c of s.cells.filter((x) => x.method && x.protocol === "grpc-h2c" && x.concurrency > 1)) {
    for (const system of ["platform", "plain"] as const) {
      rows.push([c.method!, system, ...cols.map((k) => f(c[system].cpuMsPerRequest[k] ?? Number.NaN, 2)), f(c[system].receiptsQueuedPerRequest, 2)]);
    }
  }
  return rows;
}

function memoryRows(s: BenchSummary): string[][] {
  const cols = countedServices.toReversed();
  const rows = [["resident memory MiB (now / peak)", ...cols]];
  for (const system of ["platform", "plain"] as const) {
    rows.push([
      system,
      ...cols.map((k) => (s.memory[system][k] ? `${f(s.memory[system][k]!.rssKiB / 1024, 0)} / ${f(s.memory[system][k]!.peakKiB / 1024, 0)}` : "-")),
    ]);
  }
  return rows;
}

function ceilingRows(s: BenchSummary): string[][] {
  const rows = [["database alone (one PlaceOrder's statements)", "clients", "per s", "platform PlaceOrder share", "plain PlaceOrder share"]];
  for (const c of s.ceiling) rows.push(["pg pool, no Node hop", String(c.concurrency), f(c.perSec, 0), f(c.platformShare, 3), f(c.plainShare, 3)]);
  return rows;
}

function protocolRows(s: BenchSummary): string[][] {
  const rows = [["gRPC h2c / Connect JSON HTTP/1.1 latency, 1 client, gateway", "platform p50", "plain p50", "platform p25", "plain p25"]];
  for (const p of s.protocols) rows.push([p.method, f(p.platform.p50, 2), f(p.plain.p50, 2), f(p.platform.p25, 2), f(p.plain.p25, 2)]);
  return rows;
}

/** What refused work, one line per chain and code (the first message seen in the run). */
export function failureLines(s: BenchSummary): string[] {
  const seen = new Map<string, string>();
  for (const c of s.cells) {
    for (const system of ["platform", "plain"] as const) {
      for (const [code, message] of Object.entries(c[system].failureSamples)) {
        const key = `${system} ${code}`;
        if (!seen.has(key)) seen.set(key, `${key} (first in ${c.id}): ${message}`);
      }
    }
  }
  return [...seen.values()];
}

/**
 * Share of a chain's orders whose receipts were still queued when its legs ended, above which the
 * throughput ratio is flagged: that chain was credited with orders whose receipt work (relay,
 * mailer, database) it had not done yet. 0.1: a tenth of an order's CPU is about the ratio's
 * own noise.
 */
export const receiptsBacklogWarnAt = 0.1;

/** A line for each high-concurrency cell whose chain left receipt work for after its legs. */
export function backlogLines(s: BenchSummary): string[] {
  const lines: string[] = [];
  for (const c of s.cells.filter((x) => x.method === "PlaceOrder" && x.concurrency > 1)) {
    for (const system of ["platform", "plain"] as const) {
      const q = c[system].receiptsQueuedPerRequest;
      if (q > receiptsBacklogWarnAt) {
        lines.push(
          `${c.id}: the ${system} chain left ${f(q, 2)} receipts per order queued at its legs' end: its throughput includes work it had not done yet (its CPU column includes the drain)`,
        );
      }
    }
  }
  return lines;
}

/** How much of the machine others used while we measured: ratios from a busy machine deserve less trust. */
export function noiseLine(s: BenchSummary): string {
  return `other processes used ${f(s.foreignCores, 2)} cores on average while legs ran${s.foreignCores > 0.25 ? " (a busy machine: read the ratios with care)" : ""}`;
}

/** Every table, for the terminal. */
export function textReport(s: BenchSummary): string {
  const sections = [
    throughputRows(s),
    protocolRows(s),
    s.hops.length > 0 ? hopRows(s) : undefined,
    cpuRows(s),
    memoryRows(s),
    s.ceiling.length > 0 ? ceilingRows(s) : undefined,
  ];
  return sections
    .filter((x): x is string[][] => x !== undefined)
    .map(renderTable)
    .concat([...failureLines(s), ...backlogLines(s), noiseLine(s)].join("\n"))
    .join("\n\n");
}

function markdownTable(rows: string[][]): string {
  const [head, ...body] = rows;
  if (!head) return "";
  return [`| ${head.join(" | ")} |`, `|${head.map(() => "---").join("|")}|`, ...body.map((r) => `| ${r.join(" | ")} |`)].join("\n");
}

export interface RunInfo {
  command: string;
  commit: string;
  date: string;
  durationSec: number;
  machine: string;
}

/** docs/bench/results.md: the headline tables and how they were made. */
export function markdownReport(s: BenchSummary, info: RunInfo): string {
  const parts = [
    "# Bench results",
    "",
    "The platform against the plain Connect chain of the same four services (lab/plain-chain: connectNodeAdapter,",
    "createGrpcTransport, pg.Pool; same proto, call graph, SQL statements and transactions; no interceptors, request",
    "logs or deadlines; TCP no-delay on every socket), both running at once on one embedded PostgreSQL, measured in",
    "interleaved rounds by a load generator in its own process. The platform's gateway serves HTTP/1.1 and h2c on one",
    "port; the plain gateway on two (node's h2c server cannot also speak HTTP/1.1).",
    "",
    "- ratio: platform/plain throughput, median over rounds (the lowest and highest round beside it); p50/p99 pool",
    "  every round. At one client the two chains' legs run back to back; at 32 clients both chains share one leg, every",
    "  user switching chain together each 0.5 s, so the machine's drift falls on both (req/s: users x requests / the",
    "  time spent in the chain's calls).",
    "- hops: each hop of PlaceOrder's path and of ListProducts' (a read, steadier: no commit) called directly at one client,",
    "  the two chains' requests alternating in blocks of 20 in one leg; gap = platform p50 - plain p50 (the hops below",
    "  included), added = this hop's gap minus the gap of the hop it calls.",
    "- CPU: user + system time of each process over the legs (/proc), divided by the requests served (in a shared leg,",
    "  a chain's processes are also counted while idle in the other chain's slices). postgres: the backends serving the",
    "  chain's own database (pg_stat_activity), plus the server's own processes' CPU split by the time in each chain's calls.",
    "  The receipts each leg queued are sent before its CPU is read; receipts queued at leg end: the receipts still pending",
    "  in the chain's outbox when its load stopped, per order (a chain that falls behind gets throughput it has not paid for).",
    "- database alone: one PlaceOrder's statements from a pg pool with no Node hop; share = PlaceOrder req/s through",
    "  the gateway over gRPC at the same concurrency / that rate.",
    "",
    "Only ratios pass or fail (test/bench.test.ts); absolute numbers depend on the machine and on its other load.",
    "",
    "```sh",
    info.command,
    "```",
    "",
    `Commit ${info.commit}, ${info.date}, ${info.durationSec} s, ${info.machine}; ${noiseLine(s)}.`,
    "",
    markdownTable(throughputRows(s)),
    "",
    markdownTable(protocolRows(s)),
  ];
  if (s.hops.length > 0) parts.push("", markdownTable(hopRows(s)));
  parts.push("", markdownTable(cpuRows(s)), "", markdownTable(memoryRows(s)));
  if (s.ceiling.length > 0) parts.push("", markdownTable(ceilingRows(s)));
  const backlog = backlogLines(s);
  if (backlog.length > 0) parts.push("", ...backlog.map((l) => `- ${l}`));
  const failures = failureLines(s);
  if (failures.length > 0) parts.push("", "Failures (the first message of each kind):", "", ...failures.map((l) => `- ${l}`));
  return `${parts.join("\n")}\n`;
}
