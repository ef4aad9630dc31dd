/**
 * CPU time per request log line: the platform's logger (packages/runtime
 * logger.ts: batched writes, level label, ISO time, the trace mixin) writing
 * the request line as request-log-interceptor.ts builds it, to stdout (send
 * it to /dev/null). Run it from two checkouts alternately to compare a change.
 *
 *   node --import tsx lab/profile/log-line-cost.ts [lines per round] [rounds] > /dev/null
 *
 * Prints one JSON line on stderr: µs per line, each round and the median.
 */
import { createLogger } from "../../packages/runtime/src/observability/logger.js";
import { median } from "../stats.js";

const lines = Number(process.argv[2] ?? 200_000);
const rounds = Number(process.argv[3] ?? 7);
const logger = createLogger("pricing", "info");

function round(n: number): number {
  const before = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const line: Record<string, unknown> = {
      procedure: "/pricing.v1.PricingService/GetPrices",
      code: "ok",
      durationMs: (i % 50) / 10,
      requestId: "3f2c1a9e-6a1b-4c1e-9f7d-2b8c0e4d5a6f",
    };
    line.deadlineMs = 4870;
    line.deadlineSource = "header";
    logger.info(line, "rpc");
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / n;
}

round(Math.min(lines, 50_000));
const us: number[] = [];
for (let r = 0; r < rounds; r++) us.push(round(lines));
process.stderr.write(`${JSON.stringify({ usPerLine: Math.round(median(us) * 1000) / 1000, rounds: us.map((u) => Math.round(u * 1000) / 1000) })}\n`);
logger.flush();
