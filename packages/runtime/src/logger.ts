import { pino, type Logger } from "pino";

export type { Logger };

/**
 * One JSON logger per process. Every line carries the service name so that
 * logs from several services can be read as one stream.
 */
export function createLogger(service: string, level: string): Logger {
  return pino({
    level,
    base: { service, pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  });
}
