import { chainServices as serviceNames, type ChainService as ServiceName } from "./chain.js";
import type { Attribution } from "./attribution.js";
import type { Bucket, UserModel } from "./load/protocol.js";
import type { ReceiptCounts } from "./receipts/receipt-counts.js";
import type { CapacityMeasurement, RawRun } from "./run-scenario.js";
import { sumOf } from "./metrics/prometheus.js";
import { mean, percentile, ratio, round, sum } from "./stats.js";

/**
 * The health checks the services answer (orchestrators' probes, a breaker's
 * probe, a bulkhead's stall check): none is a user request's attempt, so the
 * per-request counts leave them out.
 */
const healthCheck = { procedure: "/grpc.health.v1.Health/Check" };

/** Requests a service received for its APIs between two snapshots. */
function apiRequests(recorder: RawRun["recorder"], service: ServiceName, from: number, to: number): number {
  return recorder.delta(service, from, to, "rpc_server_requests_total") - recorder.delta(service, from, to, "rpc_server_requests_total", healthCheck);
}

/** The gateway's intake_admit_fraction: its lowest value in the run's scrapes, and when the last user left (undefined: never scraped). */
function intakeSeen(raw: RawRun): { lowest: number; atEnd: number } | undefined {
  const values = raw.recorder.snapshots.flatMap((s) => {
    const gateway = s.services.gateway;
    return gateway?.some((x) => x.name === "intake_admit_fraction") ? [{ at: s.at, fraction: sumOf(gateway, "intake_admit_fraction") }] : [];
  });
  if (values.length === 0) return undefined;
  const end = values.reduce((best, v) => (Math.abs(v.at - raw.marks.usersGoneAt) < Math.abs(best.at - raw.marks.usersGoneAt) ? v : best));
  return { lowest: Math.min(...values.map((v) => v.fraction)), atEnd: end.fraction };
}

/** Numbers for one window of a run (rates per second, ratios per user request sent in the window). */
export interface WindowStats {
  fromSec: number;
  toSec: number;
  /** New user operations per second (what the schedule asked for, as it was actually sent). */
  offeredPerSec: number;
  /** Requests actually sent per second: first tries and the users' retries. */
  sentPerSec: number;
  goodputPerSec: number;
  /** Share of the user operations started in the window that were served on some try. */
  usersServedRatio: number;
  ordersPerSec: number;
  /** GetOrder (the fast method: never needs pricing) sent and succeeded per second. */
  readsOfferedPerSec: number;
  readsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  /** db_transactions_total increase (pricing-db + orders-db) per user request sent in the window. */
  dbTxPerRequest: number;
  /** Requests received at each hop (rpc_server_requests_total) per user request. */
  hopsPerRequest: Record<ServiceName, number>;
}

export interface RunResult {
  scenario: string;
  profile: string;
  /** "naive", "platform", or the platform with one mechanism off ("platform-no-breakers"...). */
  variant: string;
  mechanismOff?: string;
  /** Which repetition of the plan (1-based). */
  repetition?: number;
  user: Omit<UserModel, "patienceMs">;
  quick: boolean;
  clientTimeoutMs: number;
  capacity: CapacityMeasurement;
  rates: { base: number; during: number };
  /** Seconds from the load's start. `trigger` is when the trigger was actually applied and removed. */
  timeline: { preSec: number; triggerSec: number; postSec: number; trigger: { fromSec: number; toSec: number } };
  totals: {
    sent: number;
    succeeded: number;
    skipped: number;
    offeredPerSec: number;
    goodputPerSec: number;
    ordersPerSec: number;
    failures: Record<string, number>;
    p50Ms: number;
    p99Ms: number;
  };
  windows: { pre: WindowStats; trigger: WindowStats; post: WindowStats; run: WindowStats };
  amplification: {
    /** As the issue defines it: db transactions (both databases) per user request, whole run including the tail. */
    dbTxPerRequest: number;
    /** Same, in the steady window before the trigger: what one request normally costs (the mix has 1-3 transactions per request). */
    baselineDbTxPerRequest: number;
    /** Same, during the trigger window. */
    triggerDbTxPerRequest: number;
    /** triggerDbTxPerRequest / baselineDbTxPerRequest: 1 = no extra database work per request under the trigger. */
    triggerVsBaseline: number;
    /**
     * Requests received at each hop per user request, whole run with its tail
     * (services count a request when it ends, so a window would miss long retry chains).
     */
    hopsPerRequest: Record<ServiceName, number>;
    /** Attempts sent to each dependency (rpc_client_calls_total) per user request, whole run. */
    callsPerRequest: Record<string, number>;
  };
  /** Work done for users who had given up. */
  lateWork: {
    /** deadline_work_after_deadline_total increase, every service: handlers that finished after their deadline. */
    handlersAfterDeadline: number;
    /** db transactions that started after every user of the run had left (last send + client timeout). */
    dbTxAfterUsersLeft: number;
    /** RPCs received by any service after every user had left. */
    requestsAfterUsersLeft: number;
    /** Statements seen on the server running longer than the client's timeout (sampled every 200 ms; lower bound). */
    longStatements: number;
    longStatementSeconds: number;
    /** Orders stored for PlaceOrder calls the user saw fail. */
    ordersForFailedCalls: number;
    /** Transactions that ended more than 0.25 s after their user gave up (from the services' logs; absent where they were not read). */
    transactionsAfterCallerLeft?: number;
  };
  orders: { stored: number; duplicates: number };
  recovery: {
    /** Mean goodput of the steady seconds before the trigger. */
    normalGoodputPerSec: number;
    /** Seconds from the trigger's removal until goodput (3 s mean) is back to 95% of normal; null: did not recover within the run. */
    recoveredAfterSec: number | null;
    /** Goodput of the last seconds of the run / normal goodput. */
    endGoodputRatio: number;
    /** Goodput over the whole post-trigger window / normal goodput. */
    postGoodputRatio: number;
  };
  /** Goodput during the trigger / the reference capacity. */
  triggerGoodputVsCapacity: number;
  /** Did the trigger overload the stack? Scenarios that must (`mustOverload`) only. */
  overload?: Overload;
  /** Work per user request from the services' logs (scenarios that attribute it). */
  attribution?: Attribution;
  /** Every order's receipt, once the queue drained (the outbox scenario). */
  receipts?: ReceiptCounts;
  /** Resilience machinery seen at work (increase over the run). */
  mechanisms: {
    retries: number;
    retriesRefused: number;
    shed: number;
    breakerRejected: number;
    bulkheadRejected: number;
    dbRejected: number;
    cancelledStatements: number;
  };
  /** Per-second series from the load's start, by send time (goodput: requests sent that second that succeeded). */
  series: { bucketSec: number; offered: number[]; goodput: number[]; orders: number[]; failed: number[]; p99Ms: number[] };
  settled: boolean;
  /** Reasons to distrust this run's numbers (printed under the table). */
  warnings: string[];
}

/**
 * Whether the trigger overloaded the stack, from what the users saw during
 * it: an overloaded stack refuses work (shedding, intake) or keeps it
 * queued past the users' patience; either way it serves less than it is
 * sent. "Less" is below `overloadBelow` of it: a stack that keeps up fails
 * only the odd request.
 */
export interface Overload {
  /** Goodput during the trigger / requests sent during it (first tries and retries, by send time). */
  goodputVsSent: number;
  /** Tries sent during the trigger that ran out of the users' patience, as a share of those sent. */
  timedOutShare: number;
  confirmed: boolean;
}

export const overloadBelow = 0.9;

function overloadOf(bs: readonly Bucket[]): Overload {
  const sent = sum(bs.map((b) => b.sent ?? b.offered));
  const goodputVsSent = round(ratio(sum(bs.map((b) => b.succeeded)), sent));
  return { goodputVsSent, timedOutShare: round(ratio(sum(bs.map((b) => b.timeouts ?? 0)), sent)), confirmed: sent > 0 && goodputVsSent < overloadBelow };
}

function totalsOf(buckets: readonly Bucket[]) {
  const failures: Record<string, number> = {};
  for (const b of buckets) for (const [code, n] of Object.entries(b.failed)) failures[code] = (failures[code] ?? 0) + n;
  return failures;
}

export function analyze(raw: RawRun): RunResult {
  const { load, recorder, marks, timing } = raw;
  const bucketSec = load.bucketMs / 1000;
  const fullBuckets = Math.floor(load.scheduledMs / load.bucketMs);
  const buckets = Array.from(
    { length: fullBuckets },
    (_, i) => load.buckets[i] ?? { offered: 0, sent: 0, succeeded: 0, usersServed: 0, orders: 0, readsOffered: 0, reads: 0, failed: {}, latenciesMs: [] },
  );
  const at = (sec: number) => load.startedAt + sec * 1000;
  const preSec = timing.preMs / 1000;
  const triggerSec = timing.triggerMs / 1000;
  const postSec = timing.postMs / 1000;
  const endSec = load.scheduledMs / 1000;

  const window = (fromSec: number, toSec: number): WindowStats => {
    const i0 = Math.max(0, Math.floor(fromSec / bucketSec));
    const i1 = Math.min(buckets.length, Math.ceil(toSec / bucketSec));
    const bs = buckets.slice(i0, i1);
    const secs = Math.max(bucketSec, (i1 - i0) * bucketSec);
    const sent = sum(bs.map((b) => b.sent ?? b.offered));
    const ops = sum(bs.map((b) => b.offered));
    const lat = bs.flatMap((b) => b.latenciesMs);
    const from = at(i0 * bucketSec);
    const to = at(i1 * bucketSec);
    const hops = {} as Record<ServiceName, number>;
    for (const s of serviceNames) hops[s] = round(ratio(apiRequests(recorder, s, from, to), sent));
    return {
      fromSec: i0 * bucketSec,
      toSec: i1 * bucketSec,
      offeredPerSec: round(ops / secs, 1),
      sentPerSec: round(sent / secs, 1),
      usersServedRatio: round(ratio(sum(bs.map((b) => b.usersServed ?? 0)), ops)),
      goodputPerSec: round(sum(bs.map((b) => b.succeeded)) / secs, 1),
      ordersPerSec: round(sum(bs.map((b) => b.orders)) / secs, 1),
      // ?? 0: reports written before the column existed.
      readsOfferedPerSec: round(sum(bs.map((b) => b.readsOffered ?? 0)) / secs, 1),
      readsPerSec: round(sum(bs.map((b) => b.reads ?? 0)) / secs, 1),
      p50Ms: round(percentile(lat, 50), 0),
      p99Ms: round(percentile(lat, 99), 0),
      dbTxPerRequest: round(ratio(recorder.deltaAll(from, to, "db_transactions_total"), sent)),
      hopsPerRequest: hops,
    };
  };

  // The first second is left out of "normal": connections and the rate are still ramping up.
  const pre = window(Math.min(1, preSec / 2), preSec);
  const trigger = window(preSec, preSec + triggerSec);
  const post = window(preSec + triggerSec, endSec);
  const run = window(0, endSec);

  // Whole run, the tail after the schedule included: naive retries go on long after the last user left.
  const first = recorder.snapshots[0]?.at ?? load.startedAt;
  const dbTxRun = recorder.deltaAll(first, marks.endAt, "db_transactions_total");
  const goodput = buckets.map((b) => b.succeeded / bucketSec);
  const normal = mean(goodput.slice(Math.ceil(pre.fromSec / bucketSec), Math.floor(preSec / bucketSec)));
  const offSec = (marks.triggerOffAt - load.startedAt) / 1000;

  // Recovered: from the first bucket after the trigger where goodput over the
  // next second is back to 95% of normal and, from there to the end of the
  // run, averages at least 90% of it (a brief spike does not count).
  const perSecond = Math.max(1, Math.round(1 / bucketSec));
  let recoveredAfterSec: number | null = null;
  // Nothing served before the trigger: nothing to come back to (the run's warnings say why).
  for (let i = Math.max(0, Math.ceil(offSec / bucketSec)); normal > 0 && i + perSecond <= goodput.length; i++) {
    if (mean(goodput.slice(i, i + perSecond)) >= 0.95 * normal && mean(goodput.slice(i)) >= 0.9 * normal) {
      recoveredAfterSec = round(Math.max(0, i * bucketSec - offSec), 2);
      break;
    }
  }
  const overload = raw.scenario.mustOverload
    ? overloadOf(buckets.slice(Math.floor(trigger.fromSec / bucketSec), Math.ceil(trigger.toSec / bucketSec)))
    : undefined;
  const tail = goodput.slice(Math.max(Math.ceil((preSec + triggerSec) / bucketSec), goodput.length - 3 * perSecond));

  const delta = (name: string, labels: Record<string, string> = {}) => recorder.deltaAll(first, marks.endAt, name, labels);
  const hopsPerRequest = {} as Record<ServiceName, number>;
  for (const s of serviceNames) hopsPerRequest[s] = round(ratio(apiRequests(recorder, s, first, marks.endAt), load.sent));
  const callsPerRequest: Record<string, number> = {};
  for (const dep of ["checkout", "orders", "pricing"])
    callsPerRequest[dep] = round(
      ratio(delta("rpc_client_calls_total", { dependency: dep }) - delta("rpc_client_calls_total", { dependency: dep, ...healthCheck }), load.sent),
    );
  const allLatencies = buckets.flatMap((b) => b.latenciesMs);
  const totalSucceeded = sum(buckets.map((b) => b.succeeded));

  const warnings: string[] = [];
  if (pre.offeredPerSec > 0 && pre.goodputPerSec < 0.8 * pre.offeredPerSec) {
    warnings.push(
      `before the trigger only ${Math.round((pre.goodputPerSec / pre.offeredPerSec) * 100)}% of the offered load succeeded: the platform was not healthy at baseline (CPU starved by other work?), so this run says little`,
    );
  }
  if (overload && !overload.confirmed) {
    warnings.push(
      `the trigger did not overload the stack (it served ${Math.round(overload.goodputVsSent * 100)}% of what was sent during it): the run is invalid and shows no recovery`,
    );
  }
  for (const e of raw.serviceExits) warnings.push(`${e}: that service's counters restarted from zero, so its counts are too low`);
  if (!marks.settled) warnings.push("still busy when the settle time ran out: work after the users left is undercounted");
  const intake = intakeSeen(raw);
  if (intake && intake.atEnd < 1) {
    // A recovery that falls short is then the edge's own cut, readmitting step by step, not the chain's backlog.
    warnings.push(
      `the gateway's intake controller admitted ${Math.round(intake.atEnd * 100)}% of new requests when the users left (lowest in the run ${Math.round(intake.lowest * 100)}%)`,
    );
  }
  if (raw.receipts && !raw.receipts.exactlyOnce) {
    const c = raw.receipts;
    warnings.push(
      `receipts not exactly once: ${c.sent}/${c.orders} sent, ${c.pending} pending, ${c.failed} failed, ${c.withoutReceipt} without a receipt; the mailer sent ${c.mailerSent} for ${c.sentInDatabase} sent in the database`,
    );
  }

  return {
    scenario: raw.scenario.name,
    profile: raw.profile,
    variant: raw.variant.name,
    ...(raw.variant.mechanismOff ? { mechanismOff: raw.variant.mechanismOff } : {}),
    user: raw.user,
    quick: raw.quick,
    clientTimeoutMs: raw.clientTimeoutMs,
    capacity: {
      measuredPerSec: round(raw.capacity.measuredPerSec, 1),
      ...(raw.capacity.openLoop ? { openLoop: { ...raw.capacity.openLoop, perSec: round(raw.capacity.openLoop.perSec, 1) } } : {}),
      referencePerSec: round(raw.capacity.referencePerSec, 1),
      concurrency: raw.capacity.concurrency,
      durationMs: raw.capacity.durationMs,
      requestsBefore: raw.capacity.requestsBefore,
    },
    rates: { base: round(raw.rates.base, 1), during: round(raw.rates.during, 1) },
    timeline: {
      preSec,
      triggerSec,
      postSec,
      trigger: { fromSec: round((marks.triggerOnAt - load.startedAt) / 1000), toSec: round(offSec) },
    },
    totals: {
      sent: load.sent,
      succeeded: load.succeeded,
      skipped: load.skipped,
      offeredPerSec: round(sum(buckets.map((b) => b.sent ?? b.offered)) / endSec, 1),
      goodputPerSec: round(totalSucceeded / endSec, 1),
      ordersPerSec: round(sum(buckets.map((b) => b.orders)) / endSec, 1),
      failures: totalsOf(load.buckets),
      p50Ms: round(percentile(allLatencies, 50), 0),
      p99Ms: round(percentile(allLatencies, 99), 0),
    },
    windows: { pre, trigger, post, run },
    amplification: {
      dbTxPerRequest: round(ratio(dbTxRun, load.sent)),
      baselineDbTxPerRequest: pre.dbTxPerRequest,
      triggerDbTxPerRequest: trigger.dbTxPerRequest,
      triggerVsBaseline: round(ratio(trigger.dbTxPerRequest, pre.dbTxPerRequest)),
      hopsPerRequest,
      callsPerRequest,
    },
    lateWork: {
      handlersAfterDeadline: delta("deadline_work_after_deadline_total"),
      dbTxAfterUsersLeft: recorder.deltaAll(marks.usersGoneAt, marks.endAt, "db_transactions_total"),
      requestsAfterUsersLeft:
        recorder.deltaAll(marks.usersGoneAt, marks.endAt, "rpc_server_requests_total") -
        recorder.deltaAll(marks.usersGoneAt, marks.endAt, "rpc_server_requests_total", healthCheck),
      longStatements: raw.longStatements.count,
      longStatementSeconds: raw.longStatements.seconds,
      ordersForFailedCalls: raw.orders.ordersForFailedCalls,
      ...(raw.transactionsAfterCallerLeft !== undefined ? { transactionsAfterCallerLeft: raw.transactionsAfterCallerLeft } : {}),
    },
    orders: { stored: raw.orders.orders, duplicates: raw.orders.duplicates },
    recovery: {
      normalGoodputPerSec: round(normal, 1),
      recoveredAfterSec,
      endGoodputRatio: round(ratio(mean(tail), normal)),
      postGoodputRatio: round(ratio(post.goodputPerSec, normal)),
    },
    triggerGoodputVsCapacity: round(ratio(trigger.goodputPerSec, raw.capacity.referencePerSec)),
    ...(overload ? { overload } : {}),
    ...(raw.attribution ? { attribution: raw.attribution } : {}),
    ...(raw.receipts ? { receipts: raw.receipts } : {}),
    mechanisms: {
      retries: delta("retry_retries_total"),
      retriesRefused: delta("retry_refused_total"),
      shed: delta("admission_shed_total"),
      breakerRejected: delta("circuit_breaker_rejected_total"),
      bulkheadRejected: delta("bulkhead_rejected_total"),
      dbRejected: delta("db_transactions_rejected_total"),
      cancelledStatements: delta("db_statements_total", { outcome: "cancelled_deadline" }) + delta("db_statements_total", { outcome: "cancelled_caller" }),
    },
    series: {
      bucketSec,
      offered: buckets.map((b) => (b.sent ?? b.offered) / bucketSec),
      goodput,
      orders: buckets.map((b) => b.orders / bucketSec),
      failed: buckets.map((b) => sum(Object.values(b.failed)) / bucketSec),
      p99Ms: buckets.map((b) => (b.latenciesMs.length === 0 ? 0 : round(percentile(b.latenciesMs, 99), 0))),
    },
    settled: marks.settled,
    warnings,
  };
}
