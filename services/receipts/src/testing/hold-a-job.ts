/**
 * A receipts runner that takes a job and never finishes it: the process a
 * test kills with SIGKILL while it holds the job (runner-recovery.spec.ts).
 *
 *   node --import tsx hold-a-job.ts <database url> <heartbeat interval ms>
 *
 * Prints `holding <payload json>` once its task has started, then waits.
 */
import pino from "pino";
import { startQueue } from "../queue.js";

const [url, intervalArg] = process.argv.slice(2);
if (!url || !intervalArg) throw new Error("usage: hold-a-job.ts <database url> <heartbeat interval ms>");

await startQueue({
  connectionString: url,
  concurrency: 1,
  pollIntervalMs: 100,
  heartbeatIntervalMs: Number(intervalArg),
  logger: pino({ level: "silent" }),
  sendReceipt: (payload) => {
    process.stdout.write(`holding ${JSON.stringify(payload)}\n`);
    return new Promise(() => {});
  },
});
