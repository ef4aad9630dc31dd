import { pino, type Logger } from "pino";
import { currentScope } from "@platform/resilience";
import { traceFields } from "./tracing.js";
import { reportUnpatched } from "../config/unpatched-dependency.js";

export type { Logger };

/** Lines are written once this many bytes are buffered... */
const batchBytes = 4096;
/** ...or this long after the first of them, whichever comes first. */
export const batchMs = 50;

/**
 * One JSON logger per process. Every line carries the service name (and,
 * of a service running as several replicas, the replica's: REPLICA_NAME,
 * server-config.ts) so that logs from several services can be read as one
 * stream.
 *
 * Lines go to stdout in batches, not one write(2) per line: every request
 * logs a line at every hop, and one system call per line cost about a
 * tenth of a hop's CPU in the bench (docs/performance.md). A line waits at
 * most `batchMs`; pino writes what is buffered when the process exits,
 * also through process.exit() (uncaught exceptions, runMain). Only a
 * SIGKILL can lose the last few lines.
 */
export function createLogger(service: string, level: string, replica: string | undefined = process.env["REPLICA_NAME"] || undefined): Logger {
  const destination = pino.destination({ dest: 1, sync: false, minLength: batchBytes });
  flushWhileWritten(destination);
  const logger = pino(
    {
      level,
      base: replica === undefined ? { service, pid: process.pid } : { service, replica, pid: process.pid },
      timestamp: isoTime,
      formatters: { level: (label) => ({ level: label }) },
      // A line written while a request is being handled names its trace
      // (trace_id, span_id), so logs and traces can be joined.
      // A line that names its trace already (the request's own line) is not looked up twice.
      mixin: (line: object) => ("trace_id" in line ? noFields : traceFields(currentScope())),
      // pino's own merge copies every field of the line into the mixin's object, on every
      // line; with nothing to add (no trace: the shipped configuration) the line is taken as
      // it is. The same fields in the same order either way.
      mixinMergeStrategy: mergeTraceFields,
    },
    destination,
  );
  reportUnpatched("sonic-boom", sonicBoomPatchProblems(destination), logger);
  return logger;
}

/**
 * The fix patches/sonic-boom+4.2.1.patch makes (patches/README.md): the
 * synchronous flush, which pino runs at exit, throws an error it cannot
 * retry instead of retrying it every 100 ms for ever. Unpatched, a service
 * whose stdout had become a broken pipe (its supervisor killed) never
 * exited. Read from the flush's own source, which the services' bundles
 * keep (names, not comments); test/hardening/supervisor-gone.test.ts holds
 * what it does.
 */
export function sonicBoomPatchProblems(destination: object): string[] {
  // An own property: sonic-boom picks the string or the buffer flavour per destination.
  const flushSync = (destination as { flushSync?: unknown }).flushSync;
  return String(flushSync).includes("!shouldRetry ||")
    ? []
    : ["its synchronous flush retries a broken pipe for ever, so a service whose supervisor died never exits"];
}

/** What the mixin returns when it has nothing to add (never written to: see mixinMergeStrategy). */
const noFields: Record<string, string> = Object.freeze({}) as Record<string, string>;

/**
 * pino's default merge of the mixin's fields into a line (`Object.assign(fields, line)`:
 * the mixin's fields first, then the line's), without the copy when there is nothing to add.
 */
export function mergeTraceFields(line: object, fields: object): object {
  return fields === noFields || isEmpty(fields) ? line : Object.assign(fields, line);
}

function isEmpty(o: object): boolean {
  for (const _ in o) return false;
  return true;
}

let isoSecond = Number.NaN;
let isoPrefix = "";

/**
 * pino's `stdTimeFunctions.isoTime`, character for character
 * (`,"time":"2026-12-01T23:15:07.123Z"`), with the date and time up to the
 * second formatted once per second instead of once per line: every request
 * writes a line at every hop, and `toISOString` was a tenth of the line's cost.
 */
export function isoTime(now = Date.now()): string {
  const second = Math.floor(now / 1000);
  if (second !== isoSecond) {
    isoSecond = second;
    // "2026-12-01T23:15:07." : the 20 characters before the milliseconds.
    isoPrefix = new Date(second * 1000).toISOString().slice(0, 20);
  }
  const ms = now - second * 1000;
  return `,"time":"${isoPrefix}${ms < 10 ? "00" : ms < 100 ? "0" : ""}${ms}Z"`;
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
  const tick = setInterval(() => {
    // A destroyed sonic-boom throws from flush() (an uncaught exception on a timer), and it
    // reports "close" only once its file is closed, a little later.
    if (!due || (destination as unknown as { destroyed?: boolean }).destroyed) return;
    due = false;
    destination.flush();
  }, batchMs);
  tick.unref();
  destination.once("close", () => clearInterval(tick));
}
