/**
 * What one request's metrics cost at a hop, prom-client's labelled calls
 * against the metric cells (@platform/resilience metric-cells.ts), in
 * CPU time: the calls a request makes at every hop (its duration and its
 * deadline at arrival observed, its admission counted and its queue wait
 * observed), and the calls every database statement makes (counted and
 * its time observed). Each side runs on histograms and counters of its
 * own registry, with the platform's buckets and label values; rounds
 * alternate (alternating-rounds.ts). A tight loop over a few label values
 * is kinder to prom-client than a service is (its label strings stay in
 * cache), so this is a lower bound of what the cells save.
 *
 *   node --import tsx lab/profile/metric-cost.ts [requests per round] [rounds]
 *
 * Prints one JSON line: nanoseconds per request (CPU), platform =
 * prom-client, plain = cells, and per statement the same.
 */
import { cellsOf, histogramCellsOf } from "@platform/resilience";
import { Counter, Histogram, Registry } from "prom-client";
import { alternatingRounds } from "./alternating-rounds.js";

const n = Number(process.argv[2] ?? 200_000);
const rounds = Number(process.argv[3] ?? 7);
if (![n, rounds].every((x) => Number.isInteger(x) && x > 0)) throw new Error("usage: metric-cost.ts [requests per round] [rounds]");

const latencyBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const procedures = ["/checkout.v1.CheckoutService/PlaceOrder", "/catalog.v1.CatalogService/ListProducts", "/orders.v1.OrderService/GetOrder"];

function metrics() {
  const registers = [new Registry()];
  return {
    duration: new Histogram({ name: "d", help: "d", labelNames: ["procedure", "code"], buckets: latencyBuckets, registers }),
    remaining: new Histogram({ name: "r", help: "r", labelNames: ["procedure"], buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 30], registers }),
    admitted: new Counter({ name: "a", help: "a", labelNames: ["criticality"], registers }),
    queueWait: new Histogram({ name: "q", help: "q", buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5], registers }),
    statements: new Counter({ name: "s", help: "s", labelNames: ["db", "outcome"], registers }),
    statementSeconds: new Histogram({ name: "t", help: "t", labelNames: ["db"], buckets: latencyBuckets.slice(0, -1), registers }),
  };
}

const direct = metrics();
const viaCells = metrics();
const cells = {
  duration: histogramCellsOf(viaCells.duration, ["procedure", "code"]),
  remaining: histogramCellsOf(viaCells.remaining, ["procedure"]),
  admitted: cellsOf(viaCells.admitted, ["criticality"]),
  queueWait: histogramCellsOf(viaCells.queueWait, []).cell(),
  statements: cellsOf(viaCells.statements, ["db", "outcome"]),
  statementSeconds: histogramCellsOf(viaCells.statementSeconds, ["db"]),
};

/** A request's metrics at one hop, then one statement's, `count` times; CPU ns per request. */
function measure(side: "platform" | "plain", count: number): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < count; i++) {
    const procedure = procedures[i % 3]!;
    const seconds = (i % 97) / 1000;
    if (side === "platform") {
      direct.remaining.observe({ procedure }, 3);
      direct.admitted.inc({ criticality: "critical" });
      direct.queueWait.observe(0);
      direct.duration.observe({ procedure, code: "ok" }, seconds);
      direct.statements.inc({ db: "orders", outcome: "ok" });
      direct.statementSeconds.observe({ db: "orders" }, seconds);
    } else {
      cells.remaining.cell(procedure).observe(3);
      cells.admitted.cell("critical").value++;
      cells.queueWait.observe(0);
      cells.duration.cell(procedure, "ok").observe(seconds);
      cells.statements.cell("orders", "ok").value++;
      cells.statementSeconds.cell("orders").observe(seconds);
    }
  }
  const used = process.cpuUsage(before);
  return Promise.resolve(((used.user + used.system) * 1000) / count);
}

const result = await alternatingRounds(measure, { n, warmupN: Math.min(n, 50_000), rounds });
process.stdout.write(
  `${JSON.stringify({ promClientNsPerRequest: result.platformUs, cellsNsPerRequest: result.plainUs, savedNsPerRequest: result.addedUs, rounds: result.rounds })}\n`,
);
