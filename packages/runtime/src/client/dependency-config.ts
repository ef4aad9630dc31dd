import type { EnvReader } from "../config/config.js";
import type { IsolationConfig } from "./isolation-interceptor.js";
import { defaultOutlierDetection, type OutlierDetectionConfig } from "./balancer/outlier-detector.js";
import type { BalancingMode } from "./balancer/balancer.js";

/** Where a dependency is and how much of us it may take. */
export interface DependencyConfig {
  /** e.g. "stock": names it in messages, metrics and its env variables. */
  name: string;
  baseUrl: string;
  isolation: IsolationConfig;
  keepalive: KeepaliveConfig;
  balancing: BalancingConfig;
}

/**
 * How calls spread over the dependency's replicas (balancer/): the
 * addresses are `addresses` when given, else every address `baseUrl`'s
 * host name resolves to, resolved again every `resolveIntervalMs`.
 */
export interface BalancingConfig {
  /** Origins (`http://127.0.0.1:8082`) to balance over instead of resolving `baseUrl`. */
  addresses: string[] | undefined;
  resolveIntervalMs: number;
  outlierDetection: OutlierDetectionConfig;
  /** BALANCING: "per-call", or "per-connection" to see what a ClusterIP Service gives (balancer.ts). */
  mode: BalancingMode;
}

/**
 * HTTP/2 PING on the connection to a dependency (connect-node's
 * Http2SessionManager; usable since connect-es 2.2 fixed verify() hanging,
 * #1746). Without it a peer that stops answering (a frozen process, a host
 * gone without a FIN or RST, a middlebox that dropped the flow) is noticed
 * only by each call's deadline, and every call sent meanwhile goes into the
 * same black hole. With it the connection is given up after one unanswered
 * PING, the calls on it fail UNAVAILABLE (retryable at the edge), and the
 * next call opens a new one.
 */
export interface KeepaliveConfig {
  /** PING after this long without data on a connection with calls open; 0: never. */
  pingIntervalMs: number;
  /** A PING unanswered this long ends the connection. */
  pingTimeoutMs: number;
  /** Also PING idle connections, so a dead one is replaced before a call needs it. */
  pingIdleConnection: boolean;
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
 * settings and HTTP/2 keepalive shared by all dependencies of this service
 * (`BREAKER_*`, `HTTP2_PING_*`); its replicas' addresses,
 * `<NAME>_ADDRESSES` (`127.0.0.1:8082,127.0.0.1:8182`: a fixed list in place
 * of resolving the URL's host name, which is then just the name), and the
 * balancing settings shared by all dependencies (`RESOLVE_INTERVAL_MS`,
 * `OUTLIER_*`). See
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
  const baseUrl = r.url(`${prefix}_URL`, defaultUrl);
  const resetTimeoutMs = r.int("BREAKER_RESET_MS", 5_000, { min: 100, max: 600_000 });
  return {
    name,
    baseUrl,
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
        resetTimeoutMs,
        // The first wait after opening, doubled by each failed trial up to BREAKER_RESET_MS (circuit-breaker.ts).
        firstResetMs: Math.min(r.int("BREAKER_FIRST_RESET_MS", 500, { min: 50, max: 600_000 }), resetTimeoutMs),
      },
    },
    keepalive: readKeepalive(r),
    balancing: readBalancing(r, `${prefix}_ADDRESSES`, baseUrl),
  };
}

function readBalancing(r: EnvReader, variable: string, baseUrl: string): BalancingConfig {
  const raw = r.optionalString(variable);
  let addresses: string[] | undefined;
  if (raw !== undefined && raw.trim() !== "") {
    const scheme = baseUrl.startsWith("https:") ? "https:" : "http:";
    addresses = [];
    for (const item of raw.split(",").map((a) => a.trim())) {
      const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(item);
      if (!m || Number(m[2]) < 1 || Number(m[2]) > 65_535) {
        r.problems.push(`${variable} must be host:port pairs separated by commas, got "${item}"`);
        continue;
      }
      addresses.push(`${scheme}//${m[1]}:${Number(m[2])}`);
    }
  }
  const d = defaultOutlierDetection;
  const baseEjectionMs = r.int("OUTLIER_BASE_EJECTION_MS", d.baseEjectionMs, { min: 10, max: 600_000 });
  return {
    addresses,
    resolveIntervalMs: r.int("RESOLVE_INTERVAL_MS", 5_000, { min: 100, max: 600_000 }),
    mode: r.oneOf("BALANCING", ["per-call", "per-connection"] as const, "per-call"),
    outlierDetection: {
      ...d,
      consecutiveFailures: r.int("OUTLIER_CONSECUTIVE_FAILURES", d.consecutiveFailures, { min: 1, max: 1_000 }),
      baseEjectionMs,
      maxEjectionMs: Math.max(baseEjectionMs, r.int("OUTLIER_MAX_EJECTION_MS", d.maxEjectionMs, { min: 10, max: 3_600_000 })),
      maxEjectedFraction: r.int("OUTLIER_MAX_EJECTED_PERCENT", d.maxEjectedFraction * 100, { min: 0, max: 100 }) / 100,
    },
  };
}

function readMethodClasses(r: EnvReader, variable: string): Record<string, string> {
  const raw = r.optionalString(variable);
  const out: Record<string, string> = {};
  if (raw === undefined) return out;
  for (const pair of raw
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p !== "")) {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=([a-z][a-z0-9_-]{0,31})$/.exec(pair);
    if (!m) {
      r.problems.push(`${variable} must be Method=class pairs separated by commas (class: lowercase letters, digits, _ or -), got "${pair}"`);
      continue;
    }
    out[m[1]!] = m[2]!;
  }
  return out;
}

/**
 * Defaults: PING after 10 s without data, give up after 5 s without its ACK,
 * idle connections too. A silent dependency is noticed within 15 s whatever
 * the deadlines (DEADLINE_MAX_MS is 30 s), for one PING frame per 10 s and
 * connection. Our dependencies are our own Node servers, which accept any
 * PING rate; a gRPC server with a keepalive policy (grpc-go allows one PING
 * per 5 min without calls by default) answers faster ones with GOAWAY
 * too_many_pings, on which connect-node doubles the interval.
 */
function readKeepalive(r: EnvReader): KeepaliveConfig {
  return {
    pingIntervalMs: r.int("HTTP2_PING_INTERVAL_MS", 10_000, { min: 0, max: 3_600_000 }),
    pingTimeoutMs: r.int("HTTP2_PING_TIMEOUT_MS", 5_000, { min: 1, max: 600_000 }),
    pingIdleConnection: r.boolean("HTTP2_PING_IDLE", true),
  };
}
