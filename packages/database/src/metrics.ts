import { cellsOf } from "@platform/resilience";
import { Counter, Gauge, Histogram, type Metric, register } from "prom-client";

export type StatementOutcome = "ok" | "error" | "cancelled_deadline" | "cancelled_caller";
export type RejectReason = "budget" | "pool_wait" | "server_down";

/** What the pool gauge reads on each scrape. */
export interface PoolStatsSource {
  readonly name: string;
  stats(): { idle: number; waiting: number; inUse: number };
}

export interface DatabaseMetrics {
  statements: Counter<"db" | "outcome">;
  transactions: Counter<"db">;
  rejected: Counter<"db" | "reason">;
  poolWait: Histogram<"db">;
  statementSeconds: Histogram<"db">;
  connectionsLost: Counter<"db" | "cause">;
  /** 1 while the server refuses connections and checkouts wait for it (reconnect-gate.ts). */
  serverDown: Gauge<"db">;
  /** Databases whose pools the gauge reports; add on create, delete on close. */
  sources: Set<PoolStatsSource>;
}

const sources = new Set<PoolStatsSource>();
let metrics: DatabaseMetrics | undefined;

/**
 * Reuses a metric already on the default registry: several Database
 * instances (and test files) share one process, and prom-client throws
 * when a name is registered twice.
 */
function once<T extends Metric>(name: string, create: () => T): T {
  return (register.getSingleMetric(name) as T | undefined) ?? create();
}

/** Buckets from 1 ms to 10 s: pool waits and statements live in this range. */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Created on first use, not on import, so importing the package has no side effects. */
export function databaseMetrics(): DatabaseMetrics {
  if (metrics) return metrics;
  once("db_pool_connections", () => new Gauge({ ...POOL_GAUGE, collect: collectPoolStats }));
  metrics = {
    statements: once("db_statements_total", () => new Counter({ ...STATEMENTS, collect: flushCells(["db", "outcome"]) })),
    transactions: once("db_transactions_total", () => new Counter({ ...TRANSACTIONS, collect: flushCells(["db"]) })),
    rejected: once("db_transactions_rejected_total", () => new Counter(REJECTED)),
    poolWait: once("db_pool_wait_seconds", () => new Histogram(POOL_WAIT)),
    statementSeconds: once("db_statement_seconds", () => new Histogram(STATEMENT_SECONDS)),
    connectionsLost: once("db_connections_lost_total", () => new Counter(CONNECTIONS_LOST)),
    serverDown: once("db_server_down", () => new Gauge(SERVER_DOWN)),
    sources,
  };
  return metrics;
}

/**
 * The statements and transactions are counted on every request, in cells
 * (@platform/resilience metric-cells.ts; `cellsOf(metric, labelNames)`),
 * and added to the counter when it is read; `inc` on it directly still
 * adds up. The two histograms are observed through `histogramCellsOf`.
 */
function flushCells(labelNames: readonly [string] | readonly [string, string]) {
  return function collect(this: Counter<string>) {
    cellsOf(this, labelNames).flushInto(this);
  };
}

const STATEMENTS = {
  name: "db_statements_total",
  help: "Statements run through Tx.query, by outcome (ok, error, cancelled_deadline, cancelled_caller).",
  labelNames: ["db", "outcome"] as const,
};
const TRANSACTIONS = {
  name: "db_transactions_total",
  help: "Transactions that reached the database (BEGIN sent): the unit of database load per request.",
  labelNames: ["db"] as const,
};
const REJECTED = {
  name: "db_transactions_rejected_total",
  help: "Transactions refused before their first statement: too little time left (budget), no connection in time (pool_wait), or the server still refusing connections when the wait for it ran out (server_down).",
  labelNames: ["db", "reason"] as const,
};
const POOL_WAIT = {
  name: "db_pool_wait_seconds",
  help: "Time spent waiting for a pooled connection.",
  labelNames: ["db"] as const,
  buckets: BUCKETS,
};
const STATEMENT_SECONDS = {
  name: "db_statement_seconds",
  help: "Duration of statements run through Tx.query.",
  labelNames: ["db"] as const,
  buckets: BUCKETS,
};
const CONNECTIONS_LOST = {
  name: "db_connections_lost_total",
  help: "Established connections that ended without us ending them, by cause (terminated_by_server, server_crash, timeout, network, other); each is destroyed and replaced.",
  labelNames: ["db", "cause"] as const,
};
const SERVER_DOWN = {
  name: "db_server_down",
  help: "1 while the server refuses connections (restarting, failing over) and transactions wait for it within their deadlines; 0 otherwise.",
  labelNames: ["db"] as const,
};
const POOL_GAUGE = {
  name: "db_pool_connections",
  help: "Pool connections by state (in_use, idle) and callers waiting for one (waiting), read on scrape.",
  labelNames: ["db", "state"] as const,
};

function collectPoolStats(this: Gauge<"db" | "state">): void {
  this.reset(); // closed databases disappear instead of freezing at their last value
  const sums = new Map<string, { idle: number; waiting: number; inUse: number }>();
  for (const source of sources) {
    const s = source.stats();
    const sum = sums.get(source.name) ?? { idle: 0, waiting: 0, inUse: 0 };
    sum.idle += s.idle;
    sum.waiting += s.waiting;
    sum.inUse += s.inUse;
    sums.set(source.name, sum);
  }
  for (const [db, s] of sums) {
    this.set({ db, state: "in_use" }, s.inUse);
    this.set({ db, state: "idle" }, s.idle);
    this.set({ db, state: "waiting" }, s.waiting);
  }
}
