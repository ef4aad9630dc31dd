/**
 * CPU time per request of the platform's server interceptors, in process:
 * the chain serve() runs (serverInterceptors in their order: request log
 * and metrics, request id, deadline scope, tracing, errors, faults) around
 * a handler that does nothing, over connect's in-memory router transport,
 * with the services' own logger (stdout: send it to /dev/null). It measures
 * the layer itself, without sockets, HTTP/2 or the database, as user+system
 * CPU time (process.cpuUsage), which other processes on a loaded machine
 * inflate far less than wall time.
 *
 *   node --import tsx lab/profile/interceptor-cost.ts [requests] [concurrency] [log level] > /dev/null
 *
 * The log level defaults to the services' (info: one line per request);
 * "warn" shows what the request lines cost.
 *
 * Prints one JSON line on stderr: { usPerRequest, requests }. Comparing two
 * commits: run this file of each tree alternately, several times, and
 * compare medians (docs/performance.md).
 */
import { createLogger } from "../../packages/runtime/src/observability/logger.js";
import { inOrder, serverInterceptors } from "../../packages/runtime/src/server/server-interceptors.js";
import { inMemoryGet } from "../../packages/runtime/src/testing/in-memory-server.js";

const requests = Number(process.argv[2] ?? 20_000);
const concurrency = Number(process.argv[3] ?? 8);
if (!(Number.isInteger(requests) && requests > 0 && Number.isInteger(concurrency) && concurrency > 0)) {
  throw new Error("usage: interceptor-cost.ts [requests] [concurrency]");
}

const logger = createLogger("cost", process.argv[4] ?? "info");
const parts = serverInterceptors({
  deadline: { edge: false, defaultMs: 3000, maxMs: 30_000 },
  logger,
  shutdownSignal: new AbortController().signal,
});
const get = inMemoryGet(inOrder(parts), () => ({}));

async function run(n: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next++;
        await get({ timeoutMs: 2000, headers: { "x-request-id": `cost-${next}` } });
      }
    }),
  );
}

// Warm-up: JIT, metric series, pools.
await run(Math.min(5000, requests));
const before = process.cpuUsage();
await run(requests);
const used = process.cpuUsage(before);
process.stderr.write(`${JSON.stringify({ usPerRequest: (used.user + used.system) / requests, requests })}\n`);
process.exit(0);
