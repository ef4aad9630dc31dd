import { serviceDefaults } from "@platform/registry";
import { readDependencyConfig, readEnv, readServerConfig, type DependencyConfig, type ServerConfig } from "@platform/runtime";
import type { RetrySchedule } from "./retry-schedule.js";

export interface ReceiptsConfig {
  server: ServerConfig;
  databaseUrl: string;
  dbSchema: string;
  /** Connections this process holds at most: the relay's one statement at a time, and one for start-up and the grants. */
  dbPoolMax: number;
  /** How long start-up waits for the database (first connection, migrations) before giving up. */
  dbStartupTimeoutMs: number;
  mailer: DependencyConfig;
  /** Receipts one claim takes at most. */
  batchSize: number;
  /** Sends in flight at once. */
  concurrency: number;
  /** After a claim that was not full, the wait before the next (the longest a new receipt waits for its claim). */
  pollIntervalMs: number;
  /** How long a claim holds its receipts; a relay that dies leaves them to be claimed again after this. */
  leaseMs: number;
  /** One send's deadline (the call to the mailer). */
  sendTimeoutMs: number;
  /** One statement's deadline (a claim, a batch's outcomes): its statement_timeout and lock_timeout. */
  statementTimeoutMs: number;
  /** After a failed send, the relay holds back between half and all of this. */
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
    // One send is one call to the mailer: by default as many sends at once as the manifest gives it calls.
    const concurrency = r.int("RECEIPTS_CONCURRENCY", mailerBulkhead.maxConcurrent, { min: 1, max: 256 });
    const roles = r.string("RECEIPTS_ENQUEUER_ROLES", "orders");
    const enqueuerRoles = roles
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== "");
    for (const role of enqueuerRoles) {
      if (!/^[a-z_][a-z0-9_]*$/.test(role)) r.problems.push(`RECEIPTS_ENQUEUER_ROLES: ${JSON.stringify(role)} is not a plain role name`);
    }
    const baseMs = r.int("RECEIPTS_BACKOFF_BASE_MS", 1000, { min: 1, max: 3_600_000 });
    const capMs = r.int("RECEIPTS_BACKOFF_CAP_MS", 60_000, { min: 1, max: 86_400_000 });
    if (capMs < baseMs) r.problems.push(`RECEIPTS_BACKOFF_CAP_MS (${capMs}) must not be below RECEIPTS_BACKOFF_BASE_MS (${baseMs})`);
    const sendTimeoutMs = r.int("RECEIPTS_SEND_TIMEOUT_MS", 5000, { min: 100, max: 600_000 });
    const statementTimeoutMs = r.int("RECEIPTS_STATEMENT_TIMEOUT_MS", 1000, { min: 50, max: 600_000 });
    const leaseMs = r.int("RECEIPTS_LEASE_MS", 30_000, { min: 1000, max: 3_600_000 });
    // Room for one send and two tries at writing its outcome (relay.ts), or no send would ever start.
    if (leaseMs < sendTimeoutMs + 3 * statementTimeoutMs)
      r.problems.push(
        `RECEIPTS_LEASE_MS (${leaseMs}) must be at least RECEIPTS_SEND_TIMEOUT_MS + 3 x RECEIPTS_STATEMENT_TIMEOUT_MS (${sendTimeoutMs + 3 * statementTimeoutMs})`,
      );
    return {
      server: readServerConfig(r, defaults.name, defaults.server),
      databaseUrl: r.postgresUrl("DATABASE_URL", undefined, { password: "DATABASE_PASSWORD" }),
      dbSchema: defaults.schema(),
      dbPoolMax: r.int("DB_POOL_MAX", 2, { min: 1, max: 200 }),
      dbStartupTimeoutMs: r.int("DB_STARTUP_TIMEOUT_MS", 60_000, { min: 0, max: 3_600_000 }),
      // As many calls in flight as sends at once.
      mailer: readDependencyConfig(r, mailer, mailerUrl, { ...mailerBulkhead, maxConcurrent: concurrency }),
      batchSize: r.int("RECEIPTS_BATCH_SIZE", 100, { min: 1, max: 10_000 }),
      concurrency,
      pollIntervalMs: r.int("RECEIPTS_POLL_INTERVAL_MS", 50, { min: 5, max: 60_000 }),
      leaseMs,
      sendTimeoutMs,
      statementTimeoutMs,
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
