import { readFileSync } from "node:fs";
import type { ChainService as ServiceName } from "./chain.js";
import type { TryRecord } from "./load/protocol.js";
import { ratio, round } from "./stats.js";

/** What one user request (one try, one x-request-id) caused, counted from the services' own log lines. */
export interface RequestWork {
  /** Requests received per service (one "rpc" line each): at the gateway 1, below it every attempt of every hop. */
  received: Record<ServiceName, number>;
  /** Transactions that reached each database (one "db transaction" line each), e.g. { "pricing-db": 27 }. */
  transactions: Record<string, number>;
  /** When each of those transactions ended (epoch ms of its log line). */
  transactionEnds: number[];
}

interface LogLine {
  msg?: string;
  requestId?: string;
  db?: string;
  time?: string;
}

/**
 * Reads the services' JSON log lines and counts, per request id, the
 * requests each service received and the transactions each database ran.
 * The services write one "rpc" line per request they served (whatever its
 * outcome, after it ended) and one "db transaction" line per transaction
 * that reached the server (at debug level), each with the request id that
 * travelled with it (x-request-id).
 */
export function workByRequest(logFiles: Record<ServiceName, string>, prefix: string): Map<string, RequestWork> {
  const work = new Map<string, RequestWork>();
  const entry = (id: string) => {
    let w = work.get(id);
    if (!w) {
      w = { received: { gateway: 0, checkout: 0, orders: 0, pricing: 0, receipts: 0, mailer: 0 }, transactions: {}, transactionEnds: [] };
      work.set(id, w);
    }
    return w;
  };
  for (const [service, file] of Object.entries(logFiles) as [ServiceName, string][]) {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n")) {
      // Cheap filter first: the file also holds start-up lines and other runs' requests.
      if (!line.includes(prefix)) continue;
      let l: LogLine;
      try {
        l = JSON.parse(line) as LogLine;
      } catch {
        continue;
      }
      if (typeof l.requestId !== "string" || !l.requestId.startsWith(prefix)) continue;
      if (l.msg === "rpc") entry(l.requestId).received[service]++;
      else if (l.msg === "db transaction" && l.db) {
        const w = entry(l.requestId);
        w.transactions[l.db] = (w.transactions[l.db] ?? 0) + 1;
        const at = l.time === undefined ? Number.NaN : Date.parse(l.time);
        if (Number.isFinite(at)) w.transactionEnds.push(at);
      }
    }
  }
  return work;
}

/** Per-request means over a set of requests. */
export interface AttributedWork {
  requests: number;
  /** Per request: transactions at each database, and at both. */
  transactionsPerRequest: Record<string, number>;
  /** Per request: requests received by checkout, orders and pricing (attempts at each hop). */
  receivedPerRequest: Record<ServiceName, number>;
  /** The most pricing-db transactions one request caused. */
  maxPricingDb: number;
}

export interface Attribution {
  /** The requests attributed, by kind: sent from `fromMs` to `toMs[kind]` (ms since the load's start). */
  fromMs: number;
  toMs: Record<string, number>;
  all: AttributedWork;
  /**
   * Per request of the load's mix: the per-kind means weighted by the mix
   * (40% PlaceOrder, 40% ListProducts, 20% GetOrder). The kinds are
   * attributed over windows of different lengths (a write's chain is longer),
   * so the plain mean over `all` would over-represent reads.
   */
  mixWeighted: { transactionsPerRequest: Record<string, number>; receivedPerRequest: Record<ServiceName, number> };
  /** Requests whose handling needs pricing (PlaceOrder, ListProducts): the failing dependency's own amplification. */
  needingPricing: AttributedWork;
  byKind: Record<string, AttributedWork>;
  /** Requests sent in the window that the gateway never logged (a lower bound check: should be 0). */
  unseenAtGateway: number;
}

function summarize(tries: readonly TryRecord[], work: Map<string, RequestWork>): AttributedWork {
  const dbs = new Set<string>();
  for (const t of tries) for (const db of Object.keys(work.get(t.id)?.transactions ?? {})) dbs.add(db);
  const tx: Record<string, number> = { all: 0 };
  for (const db of dbs) tx[db] = 0;
  const received: Record<ServiceName, number> = { gateway: 0, checkout: 0, orders: 0, pricing: 0, receipts: 0, mailer: 0 };
  let maxPricingDb = 0;
  for (const t of tries) {
    const w = work.get(t.id);
    if (!w) continue;
    for (const [db, n] of Object.entries(w.transactions)) {
      tx[db]! += n;
      tx.all! += n;
    }
    for (const s of Object.keys(received) as ServiceName[]) received[s] += w.received[s];
    maxPricingDb = Math.max(maxPricingDb, w.transactions["pricing-db"] ?? 0);
  }
  const per = (x: number) => round(ratio(x, tries.length), 2);
  return {
    requests: tries.length,
    transactionsPerRequest: Object.fromEntries(Object.entries(tx).map(([k, v]) => [k, per(v)])),
    receivedPerRequest: Object.fromEntries(Object.entries(received).map(([k, v]) => [k, per(v)])) as Record<ServiceName, number>,
    maxPricingDb,
  };
}

function weighted(byKind: Record<string, AttributedWork>, mix: Record<string, number>): Attribution["mixWeighted"] {
  // Over the kinds that had requests in their window (a quick run's naive writes have none).
  const present = Object.entries(mix).filter(([kind]) => (byKind[kind]?.requests ?? 0) > 0);
  const total = present.reduce((a, [, share]) => a + share, 0) || 1;
  const tx: Record<string, number> = {};
  const received: Record<ServiceName, number> = { gateway: 0, checkout: 0, orders: 0, pricing: 0, receipts: 0, mailer: 0 };
  for (const [kind, share] of Object.entries(mix)) {
    const w = byKind[kind];
    if (!w || w.requests === 0) continue;
    for (const [db, v] of Object.entries(w.transactionsPerRequest)) tx[db] = (tx[db] ?? 0) + (v * share) / total;
    for (const s of Object.keys(received) as ServiceName[]) received[s] += (w.receivedPerRequest[s] * share) / total;
  }
  const r2 = (o: Record<string, number>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, round(v, 2)]));
  return { transactionsPerRequest: r2(tx), receivedPerRequest: r2(received) as Record<ServiceName, number> };
}

/** Attributes the logged work to the requests sent between `fromMs` and `toMs[kind]`; `mix` weighs the kinds (see mixWeighted). */
export function attribute(
  tries: readonly TryRecord[],
  work: Map<string, RequestWork>,
  fromMs: number,
  toMs: Record<TryRecord["kind"], number>,
  mix: Record<TryRecord["kind"], number>,
): Attribution {
  const inWindow = tries.filter((t) => t.sentAtMs >= fromMs && t.sentAtMs < toMs[t.kind]);
  const byKind: Record<string, AttributedWork> = {};
  for (const kind of ["placeOrder", "listProducts", "getOrder"])
    byKind[kind] = summarize(
      inWindow.filter((t) => t.kind === kind),
      work,
    );
  return {
    fromMs: Math.round(fromMs),
    toMs: Object.fromEntries(Object.entries(toMs).map(([k, v]) => [k, Math.round(v)])),
    all: summarize(inWindow, work),
    mixWeighted: weighted(byKind, mix),
    needingPricing: summarize(
      inWindow.filter((t) => t.kind !== "getOrder"),
      work,
    ),
    byKind,
    unseenAtGateway: inWindow.filter((t) => (work.get(t.id)?.received.gateway ?? 0) === 0).length,
  };
}

/**
 * Database work for callers who had left: transactions that ended more
 * than `slackMs` after the user of the request that caused them gave up
 * (its send time plus the user's patience). A transaction the platform
 * cancels at the deadline ends at it; a naive one runs to its end.
 */
export function transactionsAfterCallerLeft(
  tries: readonly TryRecord[],
  work: Map<string, RequestWork>,
  startAt: number,
  patienceMs: number,
  slackMs = 250,
): number {
  let n = 0;
  for (const t of tries) {
    const w = work.get(t.id);
    if (!w) continue;
    const gaveUpAt = startAt + t.sentAtMs + patienceMs;
    for (const end of w.transactionEnds) if (end > gaveUpAt + slackMs) n++;
  }
  return n;
}
