/**
 * A receipts queue in a process of its own, handling crashes as a service
 * does (runMain: an uncaught exception ends the process): one runner with a
 * local queue of 4, whose jobs wait. A line `release` on stdin lets the
 * first job finish (the runner then takes the next, which waits too, so
 * the rest stay in the local queue); a line `free` lets every job, now and
 * later, finish (queue-release.spec.ts).
 *
 *   node --import tsx hold-then-release.ts <database url>
 *
 * Prints `holding <payload json>` when a job starts, the queue's log lines
 * (warn and above, JSON), `ran <payload json>` per job done, and
 * `crashed: <message>` before exiting 1 on an uncaught exception.
 */
import { createInterface } from "node:readline";
import pino from "pino";
import { startQueue } from "../queue.js";

const [url] = process.argv.slice(2);
if (!url) throw new Error("usage: hold-then-release.ts <database url>");

process.on("uncaughtException", (e) => {
  process.stdout.write(`crashed: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});

let releaseFirst: () => void = () => {};
const firstReleased = new Promise<void>((resolve) => (releaseFirst = resolve));
let free: () => void = () => {};
const freed = new Promise<void>((resolve) => (free = resolve));
createInterface({ input: process.stdin }).on("line", (line) => {
  if (line === "release") releaseFirst();
  if (line === "free") free();
});

let first = true;
await startQueue({
  connectionString: url,
  concurrency: 1,
  pollIntervalMs: 100,
  heartbeatIntervalMs: 200,
  tuning: { localQueueSize: 4 },
  logger: pino({ level: "warn" }),
  sendReceipt: async (payload) => {
    process.stdout.write(`holding ${JSON.stringify(payload)}\n`);
    if (first) {
      first = false;
      await Promise.race([firstReleased, freed]);
    } else {
      await freed;
    }
    process.stdout.write(`ran ${JSON.stringify(payload)}\n`);
  },
});
