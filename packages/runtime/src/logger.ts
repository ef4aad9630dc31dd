import { pino, type Logger } from "pino";
import { currentScope } from "@platform/resilience";
import { traceFields } from "./tracing.js";

export type { Logger };

/** Lines are written once this many bytes are buffered... */
const batchBytes = 4096;
/** ...or this long after the first of them, whichever comes first. */
export const batchMs = 50;

/**
 * One JSON logger per process. Every line carries the service name so that
 * logs from several services can be read as one stream.
 *
 * Lines go to stdout in batches, not one write(2) per line: every request
 * logs a line at every hop, and one system call per line cost about a
 * tenth of a hop's CPU in the bench (docs/performance.md). A line waits at
 * most `batchMs`; pino writes what is buffered when the process exits,
 * also through process.exit() (uncaught exceptions, runMain). Only a
 * SIGKILL can lose the last few lines.
 */
export function createLogger(service: string, level: string): Logger {
  const destination = pino.destination({ dest: 1, sync: false, minLength: batchBytes });
  flushWhileWritten(destination);
  return pino(
    {
      level,
      base: { service, pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      // A line written while a request is being handled names its trace
      // (trace_id, span_id), so logs and traces can be joined.
      // A line that names its trace already (the request's own line) is not looked up twice.
      mixin: (line: object) => ("trace_id" in line ? {} : traceFields(currentScope())),
    },
    destination,
  );
}

/**
 * Flushes `destination` every `batchMs` while lines come in, and not while
 * the process is idle: sonic-boom's flush() writes even an empty buffer,
 * and a write(2) every 50 ms was nearly all the CPU an idle service spent
 * (a test run keeps about a hundred of them waiting). A tick flushes when
 * a line came since the last one, or when a write that carried data
 * finished (what came in during it may still wait: a flush skipped because
 * a write was under way, or lines under the batch size after it): so every
 * buffered line is written within a tick or two of the last activity.
 */
export function flushWhileWritten(destination: ReturnType<typeof pino.destination>): void {
  let due = false;
  const write = destination.write.bind(destination);
  destination.write = (line: string) => {
    due = true;
    return write(line);
  };
  destination.on("write", (bytes: number) => {
    if (bytes > 0) due = true;
  });
  setInterval(() => {
    if (!due) return;
    due = false;
    destination.flush();
  }, batchMs).unref();
}
