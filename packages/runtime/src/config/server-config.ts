import { defaultDeadlineBudget } from "@platform/resilience";
import { readFaultInjectionConfig, type FaultInjectionConfig } from "../faults/fault-injection.js";
import type { EnvReader } from "./config.js";
import { type ConnectionAgeConfig, defaultConnectionAge } from "../server/connection-age.js";
import { readTlsConfig, type TlsConfig } from "../server/tls.js";

/** What every service reads from its environment, whatever it does. */
export interface ServerConfig {
  serviceName: string;
  /** This process's name among the service's replicas (`orders-2`, a pod's name), on every log line and metric; REPLICA_NAME. */
  replicaName: string | undefined;
  host: string;
  /** RPC port (Connect, gRPC, gRPC-Web; plus /healthz and /readyz). */
  port: number;
  /** Operator port: /metrics, probes, /admin. Never published to the outside. */
  adminPort: number;
  /** Interface of the operator port; defaults to HOST. */
  adminHost: string;
  logLevel: string;
  /** Largest request message accepted, in bytes. */
  readMaxBytes: number;
  /** How long SIGTERM waits for in-flight requests before aborting them. */
  drainTimeoutMs: number;
  /** GOAWAY on each HTTP/2 connection of the RPC port after this age (MAX_CONNECTION_AGE_MS, _JITTER_PERCENT, _GRACE_MS). */
  connectionAge: ConnectionAgeConfig;
  deadline: DeadlineConfig;
  admission: AdmissionConfig;
  streams: StreamConfig;
  /** OTLP/HTTP collector base URL (OTEL_EXPORTER_OTLP_ENDPOINT); tracing exports nothing without it. */
  otlpEndpoint: string | undefined;
  /** Whether /admin/faults may inject faults, with its token and the faults from start (docs/faults.md). Off by default. */
  faultInjection: FaultInjectionConfig;
  /** TLS on the RPC port and toward dependencies (server/tls.ts); plain without it. */
  tls?: TlsConfig | undefined;
}

export interface DeadlineConfig {
  /**
   * The edge applies `defaultMs` to requests without a deadline as normal
   * business; an inner service counts and logs them as a propagation bug and
   * applies `defaultMs` as its fallback.
   */
  edge: boolean;
  defaultMs: number;
  /** Inbound deadlines are capped here: nobody gets to hold our resources for an hour. */
  maxMs: number;
  /** Time kept back from every downstream call to write our own response. */
  hopReserveMs: number;
  /** A downstream call is not started with less than this left. */
  minBudgetMs: number;
}

/** Admission control: see README "Sizing". */
export interface AdmissionConfig {
  maxConcurrent: number;
  /** Tolerable wait x throughput. */
  maxQueue: number;
  maxQueueWaitMs: number;
}

/**
 * Server-streaming calls (docs/streams.md): their own admission class,
 * apart from the unary calls' slots, and their own lifetime in place of the
 * unary deadline's default and cap.
 */
export interface StreamConfig {
  /** The deadline of a stream that brings none, and the cap of one that does. */
  maxLifetimeMs: number;
  /** Streams open at once in this process; beyond it a new one is refused RESOURCE_EXHAUSTED. */
  maxConcurrent: number;
  /** Streams open at once per caller (the edge's authenticated caller, or its address). */
  maxPerCaller: number;
  /** How long the edge lets a stream go without a message before it sends an empty one (0: never). */
  heartbeatMs: number;
}

export interface ServerDefaults {
  port: number;
  adminPort: number;
  edge?: boolean;
  /** The services whose manifests say they call this one: the client certificates mutual TLS accepts by default. */
  callers?: () => readonly string[];
}

/** Reads the common server settings; see README "Configuration" for each variable. */
export function readServerConfig(r: EnvReader, serviceName: string, defaults: ServerDefaults): ServerConfig {
  const edge = defaults.edge ?? false;
  // The same 3 s inside as at the edge: an inner fallback longer than the
  // edge's default would let work run on after the edge has given up
  // (timeouts must not grow inward; `npm run audit` checks it).
  const defaultMs = r.int("DEADLINE_DEFAULT_MS", 3000, { min: 1, max: 600_000 });
  const maxMs = r.int("DEADLINE_MAX_MS", 30_000, { min: 1, max: 3_600_000 });
  const host = r.string("HOST", "127.0.0.1");
  return {
    serviceName,
    replicaName: r.optionalString("REPLICA_NAME"),
    host,
    adminHost: r.string("ADMIN_HOST", host),
    port: r.int("PORT", defaults.port, { min: 0, max: 65535 }),
    adminPort: r.int("ADMIN_PORT", defaults.adminPort, { min: 0, max: 65535 }),
    logLevel: r.oneOf("LOG_LEVEL", ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const, "info"),
    readMaxBytes: r.int("READ_MAX_BYTES", 64 * 1024, { min: 1024, max: 16 * 1024 * 1024 }),
    drainTimeoutMs: r.int("DRAIN_TIMEOUT_MS", 10_000, { min: 0, max: 300_000 }),
    connectionAge: {
      maxAgeMs: r.int("MAX_CONNECTION_AGE_MS", defaultConnectionAge.maxAgeMs, { min: 0, max: 86_400_000 }),
      jitter: r.int("MAX_CONNECTION_AGE_JITTER_PERCENT", defaultConnectionAge.jitter * 100, { min: 0, max: 50 }) / 100,
      graceMs: r.int("MAX_CONNECTION_AGE_GRACE_MS", defaultConnectionAge.graceMs, { min: 0, max: 3_600_000 }),
    },
    deadline: {
      edge,
      defaultMs: Math.min(defaultMs, maxMs),
      maxMs,
      // 20 named a frozen database's failures at the gateway every time where 5 named 4 of 6, but a
      // retry started late then reached no database at all (docs/architecture.md, "Deadlines race").
      hopReserveMs: r.int("DEADLINE_HOP_RESERVE_MS", defaultDeadlineBudget.hopReserveMs, { min: 0, max: 10_000 }),
      minBudgetMs: r.int("DEADLINE_MIN_BUDGET_MS", defaultDeadlineBudget.minBudgetMs, { min: 1, max: 10_000 }),
    },
    admission: {
      maxConcurrent: r.int("ADMISSION_MAX_CONCURRENT", 64, { min: 1, max: 100_000 }),
      maxQueue: r.int("ADMISSION_MAX_QUEUE", 128, { min: 0, max: 1_000_000 }),
      maxQueueWaitMs: r.int("ADMISSION_MAX_QUEUE_WAIT_MS", 500, { min: 1, max: 600_000 }),
    },
    streams: {
      maxLifetimeMs: r.int("STREAM_MAX_LIFETIME_MS", 600_000, { min: 1000, max: 86_400_000 }),
      maxConcurrent: r.int("STREAM_MAX_CONCURRENT", 2000, { min: 1, max: 1_000_000 }),
      maxPerCaller: r.int("STREAM_MAX_PER_CALLER", 100, { min: 1, max: 1_000_000 }),
      // Under the 60 s idle timeout of nginx, AWS ALB and most others, with room for a late timer.
      heartbeatMs: r.int("STREAM_HEARTBEAT_MS", 20_000, { min: 0, max: 600_000 }),
    },
    faultInjection: readFaultInjectionConfig(r),
    otlpEndpoint: r.optionalString("OTEL_EXPORTER_OTLP_ENDPOINT"),
    tls: readTlsConfig(r, defaults.callers ?? (() => [])),
  };
}

/**
 * The database's deadline settings from the service's own: a transaction
 * does not start with less than DEADLINE_MIN_BUDGET_MS left (as a
 * dependency call does not), and its statement_timeout keeps back
 * DEADLINE_HOP_RESERVE_MS to report an error in time.
 */
export function databaseDeadlineOptions(server: Pick<ServerConfig, "deadline">): { minBudgetMs: number; statementReserveMs: number } {
  return { minBudgetMs: server.deadline.minBudgetMs, statementReserveMs: server.deadline.hopReserveMs };
}
