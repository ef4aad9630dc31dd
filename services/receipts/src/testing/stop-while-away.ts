/**
 * A receipts queue in a process of its own that stops as the service does
 * (stop(budget), then exit), for a stop while the database is away
 * (queue-release.spec.ts): one runner with a local queue of 4, whose jobs
 * wait until the process ends, so that the runner stops with a job running
 * and the rest fetched and waiting in its local queue.
 *
 *   node --import tsx stop-while-away.ts <database url>
 *
 * Prints `holding <payload json>` when a job starts and the queue's log
 * lines (warn and above, JSON). A line `stop` on stdin calls stop(1000),
 * prints `stopped`, and exits 0, as runMain does after a shutdown. On an
 * uncaught exception it prints `crashed: <message>` and exits 1, as a
 * service does.
 */
import { createInterface } from "node:readline";
import pino from "pino";
import { startQueue } from "../queue.js";

const [url] = process.argv.slice(2);
if (!url) throw new Error("usage: stop-while-away.ts <database url>");

process.on("uncaughtException", (e) => {
  process.stdout.write(`crashed: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});

const queue = await startQueue({
  connectionString: url,
  concurrency: 1,
  pollIntervalMs: 100,
  heartbeatIntervalMs: 200,
  tuning: { localQueueSize: 4 },
  logger: pino({ level: "warn" }),
  sendReceipt: (payload) => {
    process.stdout.write(`holding ${JSON.stringify(payload)}\n`);
    return new Promise(() => {});
  },
});
createInterface({ input: process.stdin }).on("line", async (line) => {
  if (line !== "stop") return;
  await queue.stop(1000);
  process.stdout.write("stopped\n");
  process.exit(0);
});
