import type { RunResult } from "../analyze.js";
import { median } from "../stats.js";
import { ablations } from "../variants.js";

/** Renders rows as an aligned plain-text table (first row is the header). */
export function renderTable(rows: string[][]): string {
  const widths: number[] = [];
  for (const r of rows) {
    for (const [i, c] of r.entries()) widths[i] = Math.max(widths[i] ?? 0, c.length);
  }
  const line = (r: string[]) => r.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  const [head, ...body] = rows;
  if (!head) return "";
  return [line(head), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)].join("\n");
}

const fmt = (x: number, digits: number) => (Number.isFinite(x) ? x.toFixed(digits) : "-");

/**
 * One number over the repetitions of a run: the median, and the range when
 * there is more than one ("12.0 [11.2-13.1]"). `null` values (a profile that
 * did not recover) sort above every number and print as "never".
 */
export function stat(values: readonly (number | null)[], digits = 0, unit = ""): string {
  const show = (v: number | null) => (v === null ? "never" : `${fmt(v, digits)}${unit}`);
  if (values.length === 0) return "-";
  if (values.length === 1) return show(values[0]!);
  const sorted = [...values].sort((a, b) => (a === null ? (b === null ? 0 : 1) : b === null ? -1 : a - b));
  const n = sorted.length;
  const a = sorted[Math.floor((n - 1) / 2)]!;
  const b = sorted[Math.floor(n / 2)]!;
  const med = a === null || b === null ? null : (a + b) / 2;
  return `${show(med)} [${show(sorted[0]!)}-${show(sorted[n - 1]!)}]`;
}

/** Results grouped by scenario and variant, in plan order; one entry per repetition. */
export function groups(results: readonly RunResult[]): RunResult[][] {
  const by = new Map<string, RunResult[]>();
  for (const r of results) {
    const k = `${r.scenario}\u0000${r.variant ?? r.profile}`;
    by.set(k, [...(by.get(k) ?? []), r]);
  }
  return [...by.values()];
}

export const columnHelp = [
  "cap       the reference capacity (req/s); every rate is a fraction of it. The open loop's where one was measured (metastable), else the closed loop's",
  "cl/ol     capacity measured (req/s): closed loop (64 users, 2.5 s; quick 2 s) / open loop (one-try users at a rate stepped up 10% a second until the stack",
  "          falls behind; the most it completed in 2 s, per second); '-' where not measured",
  "sent/s    requests actually sent per second before -> during the trigger: new users and their retries (the schedule asks for 0.6x cap new users)",
  "goodput   successful requests per second before / during / after the trigger (by send time)",
  "trig/cap  goodput during the trigger / cap",
  "served    share of the users who started during the trigger and were served on one of their tries",
  "GetOrder  the fast method (never needs pricing) during the trigger: served / sent per second",
  "hops      requests received by checkout / orders / pricing per request sent, whole run with its tail (metrics)",
  "late      handlers finished after their deadline / database transactions that ended more than 0.25 s after their user gave up (from the services' logs; '-' where",
  "          not read: failover, overload, metastable) / orders stored for users who saw every try fail",
  "dup       duplicate orders (more than one order for one user operation)",
  "overload  whether the trigger overloaded the stack (metastable): goodput during it / requests sent during it, 'yes' below 0.90. A run without it is invalid",
  "recovery  seconds from the trigger's removal until goodput over 1 s is back to 95% of before (and averages 90% from there on), found to 0.25 s; 'never' = not within the run;",
  "          'invalid' = the trigger did not overload the stack (nothing to recover from); the other runs' recoveries are shown with the number of invalid ones",
  "With --repeat N each cell is the median over N runs, with [min-max].",
];

/** "yes 0.55" (goodput / sent during the trigger), "NO 0.97", over repetitions "yes 0.55 [...]" or "NO in 1/3 ..."; "-" where not checked. */
function overloadCell(g: readonly RunResult[]): string {
  const checked = g.filter((x) => x.overload !== undefined);
  if (checked.length === 0) return "-";
  const failed = checked.filter((x) => !x.overload!.confirmed).length;
  const ratios = stat(
    checked.map((x) => x.overload!.goodputVsSent),
    2,
  );
  if (failed === 0) return `yes ${ratios}`;
  return checked.length === 1 ? `NO ${ratios}` : `NO in ${failed}/${checked.length} ${ratios}`;
}

/** The recovery of the valid runs (see overloadCell): "invalid" when none is, "(N invalid)" after it when some are not. */
function recoveryCell(g: readonly RunResult[]): string {
  const valid = g.filter((x) => x.overload?.confirmed !== false);
  const invalid = g.length - valid.length;
  if (valid.length === 0) return "invalid";
  const shown = stat(
    valid.map((x) => x.recovery.recoveredAfterSec),
    2,
    " s",
  );
  return invalid === 0 ? shown : `${shown} (${invalid} invalid)`;
}

export function resultsTable(results: readonly RunResult[]): string {
  const rows: string[][] = [
    [
      "scenario",
      "variant",
      "cap",
      "cl/ol",
      "sent/s pre->trig",
      "goodput pre/trig/post",
      "trig/cap",
      "served",
      "GetOrder/s",
      "hops co/or/pr",
      "late dl/tx/orders",
      "dup",
      "overload",
      "recovery",
    ],
  ];
  for (const g of groups(results)) {
    const r = g[0]!;
    const w = (f: (x: RunResult) => number, d = 0) => stat(g.map(f), d);
    rows.push([
      r.scenario,
      r.variant ?? r.profile,
      w((x) => x.capacity.referencePerSec),
      `${w((x) => x.capacity.measuredPerSec)}/${w((x) => x.capacity.openLoop?.perSec ?? Number.NaN)}`,
      `${w((x) => x.windows.pre.sentPerSec)}->${w((x) => x.windows.trigger.sentPerSec)}`,
      `${w((x) => x.windows.pre.goodputPerSec)}/${w((x) => x.windows.trigger.goodputPerSec)}/${w((x) => x.windows.post.goodputPerSec)}`,
      w((x) => x.triggerGoodputVsCapacity, 2),
      stat(
        g.map((x) => x.windows.trigger.usersServedRatio * 100),
        0,
        "%",
      ),
      `${w((x) => x.windows.trigger.readsPerSec, 1)}/${w((x) => x.windows.trigger.readsOfferedPerSec, 1)}`,
      `${w((x) => x.amplification.hopsPerRequest.checkout, 2)}/${w((x) => x.amplification.hopsPerRequest.orders, 2)}/${w((x) => x.amplification.hopsPerRequest.pricing, 2)}`,
      `${w((x) => x.lateWork.handlersAfterDeadline)}/${r.lateWork.transactionsAfterCallerLeft === undefined ? "-" : w((x) => x.lateWork.transactionsAfterCallerLeft ?? Number.NaN)}/${w((x) => x.lateWork.ordersForFailedCalls)}`,
      w((x) => x.orders.duplicates),
      overloadCell(g),
      recoveryCell(g),
    ]);
  }
  return renderTable(rows);
}

export const attributionHelp = [
  "Full outage, per user request: from the services' own log lines (every hop logs each request it served, each database each transaction, with the x-request-id the",
  "load generator minted for the request), counted once the platform was quiet, for the requests whose whole retry chain met the outage (sent early enough in it).",
  "requests        requests attributed (each try of a user is a request)",
  "pricing-db/req  transactions at the failing database per request of the load's mix (per-kind means weighted 40% PlaceOrder, 40% ListProducts, 20% GetOrder,",
  "                which never needs pricing); write / read: per PlaceOrder / per ListProducts",
  "max             the most pricing-db transactions one request caused",
  "all-db/req      transactions at both databases per request (a failed write also looks its key up in orders-db)",
  "hops co/or/pr   requests received by checkout / orders / pricing per request (attempts at every hop)",
  "unlogged        attributed requests the gateway never logged (should be 0)",
];

export function attributionTable(results: readonly RunResult[]): string {
  const rows: string[][] = [["scenario", "variant", "requests", "pricing-db/req", "write", "read", "max", "all-db/req", "hops co/or/pr", "unlogged"]];
  for (const g of groups(results)) {
    const r = g[0]!;
    if (!r.attribution) continue;
    const a = (f: (x: NonNullable<RunResult["attribution"]>) => number, d = 2) =>
      stat(
        g.map((x) => (x.attribution ? f(x.attribution) : Number.NaN)),
        d,
      );
    rows.push([
      r.scenario,
      r.variant,
      a((x) => x.all.requests, 0),
      a((x) => x.mixWeighted.transactionsPerRequest["pricing-db"] ?? 0),
      a((x) => x.byKind.placeOrder?.transactionsPerRequest["pricing-db"] ?? 0),
      a((x) => x.byKind.listProducts?.transactionsPerRequest["pricing-db"] ?? 0),
      a((x) => x.needingPricing.maxPricingDb, 0),
      a((x) => x.mixWeighted.transactionsPerRequest.all ?? 0),
      `${a((x) => x.mixWeighted.receivedPerRequest.checkout)}/${a((x) => x.mixWeighted.receivedPerRequest.orders)}/${a((x) => x.mixWeighted.receivedPerRequest.pricing)}`,
      a((x) => x.unseenAtGateway, 0),
    ]);
  }
  return rows.length === 1 ? "" : renderTable(rows);
}

export const receiptsHelp = [
  "Receipts (outbox scenario): orders of the run, and their receipts once the queue drained. PlaceOrder never waits for a receipt, so its numbers before and",
  "during the mailer's outage should match.",
  "orders          orders the run placed; sent / pending / failed: their receipts (failed: retry budget spent)",
  "once            every order's receipt sent, and the mailer sent exactly as many receipts as the database holds as sent (dup: repeated keys it answered without sending)",
  "max att         the most attempts one receipt needed (above 1: the outage reached the worker)",
  "drained         seconds from the mailer's recovery until no receipt was pending",
  "served / p99    users served and p99 latency of the whole mix, before -> during the outage",
];

export function receiptsTable(results: readonly RunResult[]): string {
  const rows: string[][] = [["scenario", "variant", "orders", "sent", "pending", "failed", "once", "dup", "max att", "drained", "orders/s", "served", "p99"]];
  for (const r of results) {
    const c = r.receipts;
    if (!c) continue;
    const pct = (x: number) => `${Math.round(x * 100)}%`;
    rows.push([
      r.scenario,
      `${r.variant}${r.repetition ? ` #${r.repetition}` : ""}`,
      String(c.orders),
      String(c.sent),
      String(c.pending),
      String(c.failed),
      c.exactlyOnce ? "yes" : "NO",
      String(c.mailerDuplicates),
      String(c.maxAttempts),
      c.drainedAfterSec === null ? "no" : `${c.drainedAfterSec} s`,
      `${r.windows.pre.ordersPerSec} -> ${r.windows.trigger.ordersPerSec}`,
      `${pct(r.windows.pre.usersServedRatio)} -> ${pct(r.windows.trigger.usersServedRatio)}`,
      `${r.windows.pre.p99Ms} -> ${r.windows.trigger.p99Ms} ms`,
    ]);
  }
  return rows.length === 1 ? "" : renderTable(rows);
}

/** The number each ablation compares (see variants.ts). */
function ablationMetric(scenario: string, r: RunResult): number | null {
  switch (scenario) {
    case "full-outage":
      return r.attribution?.mixWeighted.transactionsPerRequest["pricing-db"] ?? Number.NaN;
    case "slow-dependency":
      return r.windows.trigger.readsOfferedPerSec > 0 ? r.windows.trigger.readsPerSec / r.windows.trigger.readsOfferedPerSec : Number.NaN;
    case "overload":
      return r.triggerGoodputVsCapacity;
    case "metastable":
      return r.recovery.postGoodputRatio;
    default:
      return Number.NaN;
  }
}

export function ablationTable(results: readonly RunResult[]): string {
  const rows: string[][] = [["mechanism off", "scenario", "number", "with it", "without it", "change", "recovery with / without"]];
  for (const a of ablations) {
    const base = results.filter((r) => r.scenario === a.scenario && r.variant === a.baseline.name);
    const off = a.ablated ? results.filter((r) => r.scenario === a.scenario && r.variant === a.ablated!.name) : [];
    if (base.length === 0) continue;
    if (!a.ablated) {
      rows.push([a.mechanism, a.scenario, a.metric, "-", "not run", "no switch in the product: turning it off needs a code change", "-"]);
      continue;
    }
    if (off.length === 0) continue;
    const b = base.map((r) => ablationMetric(a.scenario, r));
    const o = off.map((r) => ablationMetric(a.scenario, r));
    const mb = median(b.filter((x): x is number => x !== null && Number.isFinite(x)));
    const mo = median(o.filter((x): x is number => x !== null && Number.isFinite(x)));
    rows.push([
      a.mechanism,
      a.scenario,
      a.metric,
      stat(b, 2),
      stat(o, 2),
      Number.isFinite(mb) && Number.isFinite(mo) && mb !== 0 ? `x${(mo / mb).toFixed(2)}` : "-",
      `${recoveryCell(base)} / ${recoveryCell(off)}`,
    ]);
  }
  return rows.length === 1 ? "" : renderTable(rows);
}

/** Lines to print under the table: every run's warnings, if any. */
export function warningLines(results: readonly RunResult[]): string[] {
  return results.flatMap((r) => r.warnings.map((w) => `warning: ${r.scenario}/${r.variant ?? r.profile}${r.repetition ? ` #${r.repetition}` : ""}: ${w}`));
}

/** Everything printed at the end and written to table.txt. */
export function fullReport(results: readonly RunResult[]): string {
  const parts = [resultsTable(results)];
  const attribution = attributionTable(results);
  if (attribution) parts.push(`Full outage, per user request:\n${attribution}`);
  const receipts = receiptsTable(results);
  if (receipts) parts.push(`Receipts, off the request path:\n${receipts}`);
  const ablation = ablationTable(results);
  if (ablation) parts.push(`Ablation: the platform with one mechanism off:\n${ablation}`);
  const warnings = warningLines(results);
  if (warnings.length > 0) parts.push(warnings.join("\n"));
  return parts.join("\n\n");
}
