import type { EnvReader } from "./config.js";
import type { IsolationConfig } from "./isolation-interceptor.js";

/** Where a dependency is and how much of us it may take. */
export interface DependencyConfig {
  /** e.g. "pricing": names it in messages, metrics and its env variables. */
  name: string;
  baseUrl: string;
  isolation: IsolationConfig;
}

/**
 * Reads one dependency's settings: `<NAME>_URL`, `<NAME>_MAX_CONCURRENT`,
 * `<NAME>_MAX_QUEUE` (its bulkhead), and the breaker settings shared by all
 * dependencies of this service (`BREAKER_*`). See README "Sizing".
 */
export function readDependencyConfig(r: EnvReader, name: string, defaultUrl: string): DependencyConfig {
  const prefix = name.toUpperCase().replace(/[^A-Z0-9]/g, "_");
  return {
    name,
    baseUrl: r.url(`${prefix}_URL`, defaultUrl),
    isolation: {
      maxConcurrent: r.int(`${prefix}_MAX_CONCURRENT`, 32, { min: 1, max: 10_000 }),
      maxQueue: r.int(`${prefix}_MAX_QUEUE`, 64, { min: 0, max: 100_000 }),
      breaker: {
        volumeThreshold: r.int("BREAKER_VOLUME_THRESHOLD", 20, { min: 1, max: 100_000 }),
        errorThresholdPercentage: r.int("BREAKER_ERROR_PERCENT", 50, { min: 1, max: 100 }),
        windowMs: r.int("BREAKER_WINDOW_MS", 10_000, { min: 1000, max: 600_000 }),
        resetTimeoutMs: r.int("BREAKER_RESET_MS", 5_000, { min: 100, max: 600_000 }),
      },
    },
  };
}
