import type { RunResult } from "../analyze.js";

/** Renders rows as an aligned plain-text table (first row is the header). */
export function renderTable(rows: string[][]): string {
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  const line = (r: string[]) => r.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  const [head, ...body] = rows;
  if (!head) return "";
  return [line(head), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)].join("\n");
}

const n = (x: number, digits = 0) => (Number.isFinite(x) ? x.toFixed(digits) : "-");

export const columnHelp = [
  "offered   req/s offered before -> during the trigger (open loop; fractions of the reference capacity)",
  "goodput   successful req/s before / during / after the trigger; orders/s = successful PlaceOrder per second during the trigger",
  "GetOrder  the fast method (never needs pricing) during the trigger: successful / sent per second",
  "tx/req    database transactions (pricing-db + orders-db) per user request over the whole run, tail included",
  "amp       transactions per request during the trigger / before it (1.00 = no extra database work per request; n/a: none reached the database)",
  "hops      requests received by checkout / orders / pricing per user request, whole run with its tail",
  "p50/p99   client latency of successful calls over the run, ms",
  "late      handlers finished after their deadline / db transactions after every user had left / orders stored for calls the user saw fail",
  "dup       duplicate orders (more than one order for one user operation)",
  "recovery  seconds from the trigger's removal to 95% of normal goodput (3 s mean); 'never' = not within the run",
];

export function resultsTable(results: readonly RunResult[]): string {
  const rows: string[][] = [
    ["scenario", "profile", "offered", "goodput pre/trig/post", "orders/s", "GetOrder/s", "tx/req", "amp", "hops co/or/pr", "p50/p99 ms", "late dl/tx/orders", "dup", "recovery"],
  ];
  for (const r of results) {
    const w = r.windows;
    const h = r.amplification.hopsPerRequest;
    rows.push([
      r.scenario,
      r.profile,
      `${n(r.rates.base)}->${n(r.rates.during)}`,
      `${n(w.pre.goodputPerSec)}/${n(w.trigger.goodputPerSec)}/${n(w.post.goodputPerSec)}`,
      n(w.trigger.ordersPerSec, 1),
      // Reports from before the column have no read counts.
      w.trigger.readsOfferedPerSec === undefined ? "-" : `${n(w.trigger.readsPerSec, 1)}/${n(w.trigger.readsOfferedPerSec, 1)}`,
      n(r.amplification.dbTxPerRequest, 2),
      // Nothing reached the database during the trigger (it was down): no ratio to speak of.
      r.amplification.triggerDbTxPerRequest === 0 ? "n/a" : n(r.amplification.triggerVsBaseline, 2),
      `${n(h.checkout, 2)}/${n(h.orders, 2)}/${n(h.pricing, 2)}`,
      `${n(r.totals.p50Ms)}/${n(r.totals.p99Ms)}`,
      `${r.lateWork.handlersAfterDeadline}/${r.lateWork.dbTxAfterUsersLeft}/${r.lateWork.ordersForFailedCalls}`,
      String(r.orders.duplicates),
      r.recovery.recoveredAfterSec === null ? "never" : `${n(r.recovery.recoveredAfterSec, 1)} s`,
    ]);
  }
  return renderTable(rows);
}

/** Lines to print under the table: every run's warnings, if any. */
export function warningLines(results: readonly RunResult[]): string[] {
  return results.flatMap((r) => r.warnings.map((w) => `warning: ${r.scenario}/${r.profile}: ${w}`));
}
