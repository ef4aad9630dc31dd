import { pino, type Logger } from "pino";
import { currentScope } from "@platform/resilience";
import { traceFields } from "./tracing.js";

export type { Logger };

/** Lines are written once this many bytes are buffered... */
const batchBytes = 4096;
/** ...or this long after the first of them, whichever comes first. */
const batchMs = 50;

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
  setInterval(() => destination.flush(), batchMs).unref();
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
