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
 * A service's defaults for one dependency's slots, per method class (see
 * docs/isolation.md for how each hop's defaults were sized). Deeper hops
 * get fewer: a caller's share must hold everything the dependency holds
 * for it, so that a slow dependency fills its own slots first and those of
 * the hops above never.
 */
export interface IsolationDefaults {
  /** Adaptive limit's ceiling, or the fixed limit. */
  maxConcurrent: number;
  /** Adaptive limit's floor. */
  minConcurrent: number;
  maxQueue: number;
}

/** For a dependency whose service declares nothing else (e.g. one the gateway forwards). */
export const defaultIsolation: IsolationDefaults = { maxConcurrent: 32, minConcurrent: 4, maxQueue: 16 };

/**
 * Reads one dependency's settings: `<NAME>_URL`; its slots per method class:
 * `<NAME>_LIMIT` (adaptive or fixed), `<NAME>_MAX_CONCURRENT` (the adaptive
 * limit's ceiling, or the fixed limit), `<NAME>_MIN_CONCURRENT` (the
 * adaptive limit's floor), `<NAME>_MAX_QUEUE`, `<NAME>_METHOD_CLASSES`
 * (e.g. `Search=lookups,Suggest=lookups`: methods that share one limiter;
 * unlisted methods are each their own class); and the breaker
 * settings shared by all dependencies of this service (`BREAKER_*`). See
 * README "Configuration and sizing".
 */
export function readDependencyConfig(r: EnvReader, name: string, defaultUrl: string, defaults: IsolationDefaults = defaultIsolation): DependencyConfig {
  const prefix = name.toUpperCase().replace(/[^A-Z0-9]/g, "_");
  const maxConcurrent = r.int(`${prefix}_MAX_CONCURRENT`, defaults.maxConcurrent, { min: 1, max: 10_000 });
  const minExplicit = r.optionalString(`${prefix}_MIN_CONCURRENT`) !== undefined;
  // An explicit maximum below the default floor lowers the floor with it.
  const minConcurrent = r.int(`${prefix}_MIN_CONCURRENT`, Math.min(defaults.minConcurrent, maxConcurrent), { min: 1, max: 10_000 });
  if (minExplicit && minConcurrent > maxConcurrent) {
    r.problems.push(`${prefix}_MIN_CONCURRENT (${minConcurrent}) must not exceed ${prefix}_MAX_CONCURRENT (${maxConcurrent})`);
  }
  return {
    name,
    baseUrl: r.url(`${prefix}_URL`, defaultUrl),
    isolation: {
      limit: r.oneOf(`${prefix}_LIMIT`, ["adaptive", "fixed"] as const, "adaptive"),
      maxConcurrent,
      minConcurrent: Math.min(minConcurrent, maxConcurrent),
      maxQueue: r.int(`${prefix}_MAX_QUEUE`, defaults.maxQueue, { min: 0, max: 100_000 }),
      methodClasses: readMethodClasses(r, `${prefix}_METHOD_CLASSES`),
      breaker: {
        volumeThreshold: r.int("BREAKER_VOLUME_THRESHOLD", 20, { min: 1, max: 100_000 }),
        errorThresholdPercentage: r.int("BREAKER_ERROR_PERCENT", 50, { min: 1, max: 100 }),
        windowMs: r.int("BREAKER_WINDOW_MS", 10_000, { min: 1000, max: 600_000 }),
        resetTimeoutMs: r.int("BREAKER_RESET_MS", 5_000, { min: 100, max: 600_000 }),
      },
    },
  };
}

function readMethodClasses(r: EnvReader, variable: string): Record<string, string> {
  const raw = r.optionalString(variable);
  const out: Record<string, string> = {};
  if (raw === undefined) return out;
  for (const pair of raw.split(",").map((p) => p.trim()).filter((p) => p !== "")) {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=([a-z][a-z0-9_-]{0,31})$/.exec(pair);
    if (!m) {
      r.problems.push(`${variable} must be Method=class pairs separated by commas (class: lowercase letters, digits, _ or -), got "${pair}"`);
      continue;
    }
    out[m[1]!] = m[2]!;
  }
  return out;
}
