import { serviceDefaults } from "@platform/registry";
import { readDependencyConfig, readEnv, readServerConfig, type DependencyConfig, type ServerConfig } from "@platform/runtime";
import type { RetrySchedule } from "./retry-schedule.js";

export interface ReceiptsConfig {
  server: ServerConfig;
  databaseUrl: string;
  dbSchema: string;
  /**
   * Connections this process holds at most, both pools together: the
   * queue's (concurrency + 2: a job runner each, LISTEN, maintenance) and
   * the rest for receipt bookkeeping. The Kubernetes connection budget counts
   * DB_POOL_MAX per pod, so it must be the whole.
   */
  dbPoolMax: number;
  /** The bookkeeping pool: dbPoolMax less the queue's. */
  appPoolMax: number;
  /** How long start-up waits for the database (first connection, migrations) before giving up. */
  dbStartupTimeoutMs: number;
  mailer: DependencyConfig;
  /** Jobs run at once by this process. */
  concurrency: number;
  /** How often the queue looks for jobs whose time came (new jobs arrive by LISTEN/NOTIFY at once). */
  pollIntervalMs: number;
  /** How often the queue's runner renews its heartbeat and releases the jobs of dead runners (3 missed beats: dead). */
  heartbeatIntervalMs: number;
  /** One job's deadline: its statements and its call to the mailer. */
  jobTimeoutMs: number;
  /** SendReceiptDeps.pauseAfterFailureMs. */
  pauseAfterFailureMs: number;
  retry: RetrySchedule;
  /** Roles allowed to call enqueue_receipt and receipt_status (the orders service's). */
  enqueuerRoles: string[];
}

/** Ports, bulkheads and the schema: the manifest's (service.json, beside src/ and dist/ alike). */
export const defaults = serviceDefaults(new URL("../service.json", import.meta.url));

export function loadConfig(env: Record<string, string | undefined>): ReceiptsConfig {
  const [mailer, mailerUrl, mailerBulkhead] = defaults.dependency("mailer");
  return readEnv(env, (r) => {
    // A job calls the mailer once: by default as many jobs at once as the manifest gives it calls.
    const concurrency = r.int("RECEIPTS_CONCURRENCY", mailerBulkhead.maxConcurrent, { min: 1, max: 256 });
    const roles = r.string("RECEIPTS_ENQUEUER_ROLES", "orders");
    const enqueuerRoles = roles
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== "");
    for (const role of enqueuerRoles) {
      if (!/^[a-z_][a-z0-9_]*$/.test(role)) r.problems.push(`RECEIPTS_ENQUEUER_ROLES: ${JSON.stringify(role)} is not a plain role name`);
    }
    const dbPoolMax = r.int("DB_POOL_MAX", 12, { min: 2, max: 200 });
    const appPoolMax = dbPoolMax - (concurrency + 2);
    if (appPoolMax < 1)
      r.problems.push(
        `DB_POOL_MAX (${dbPoolMax}) must be at least RECEIPTS_CONCURRENCY + 3 (${concurrency + 3}): the queue holds RECEIPTS_CONCURRENCY + 2 connections and the bookkeeping at least one`,
      );
    const baseMs = r.int("RECEIPTS_BACKOFF_BASE_MS", 1000, { min: 1, max: 3_600_000 });
    const capMs = r.int("RECEIPTS_BACKOFF_CAP_MS", 60_000, { min: 1, max: 86_400_000 });
    if (capMs < baseMs) r.problems.push(`RECEIPTS_BACKOFF_CAP_MS (${capMs}) must not be below RECEIPTS_BACKOFF_BASE_MS (${baseMs})`);
    return {
      server: readServerConfig(r, defaults.name, defaults.server),
      databaseUrl: r.postgresUrl("DATABASE_URL", undefined, { password: "DATABASE_PASSWORD" }),
      dbSchema: defaults.schema(),
      dbPoolMax,
      appPoolMax: Math.max(1, appPoolMax),
      dbStartupTimeoutMs: r.int("DB_STARTUP_TIMEOUT_MS", 60_000, { min: 0, max: 3_600_000 }),
      // As many calls in flight as jobs run at once.
      mailer: readDependencyConfig(r, mailer, mailerUrl, { ...mailerBulkhead, maxConcurrent: concurrency }),
      concurrency,
      pollIntervalMs: r.int("RECEIPTS_POLL_INTERVAL_MS", 1000, { min: 50, max: 60_000 }),
      heartbeatIntervalMs: r.int("RECEIPTS_HEARTBEAT_INTERVAL_MS", 10_000, { min: 50, max: 600_000 }),
      jobTimeoutMs: r.int("RECEIPTS_JOB_TIMEOUT_MS", 5000, { min: 100, max: 600_000 }),
      // As long as a breaker stays open before its trial call (BREAKER_RESET_MS).
      pauseAfterFailureMs: r.int("RECEIPTS_PAUSE_AFTER_FAILURE_MS", 5000, { min: 0, max: 600_000 }),
      // About 8 minutes of retrying on average (full jitter averages half of
      // each ceiling), and never less than the ceilings' spread allows: the
      // storm lab's one-minute outage took up to 10 attempts for the
      // unluckiest of 194 receipts (docs/outbox.md).
      retry: { baseMs, capMs, maxAttempts: r.int("RECEIPTS_MAX_ATTEMPTS", 20, { min: 1, max: 1000 }) },
      enqueuerRoles,
    };
  });
}
