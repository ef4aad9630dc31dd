import type { Logger as Pino } from "@platform/runtime";
import pg from "pg";

/**
 * The queue's own pool, whose connections can never end the process when
 * the database drops them.
 *
 * pg emits `error` on a client whose connection ends unexpectedly, checked
 * out or not; an `error` with no listener is an uncaught exception. The
 * pool listens on idle clients only. graphile-worker adds a listener to
 * each client it sees connect, but only while a runner is attached to the
 * pool: a client that connected between two runners (the heartbeat's
 * query, while the supervisor waited to restart a runner that had stopped
 * by itself) was later checked out by the next runner without one, and a
 * restart of PostgreSQL with `-m immediate` then ended the process
 * (test/e2e/failover.test.ts, (c), about one run in twelve under load).
 * So every client gets a listener of ours as it connects, for its whole
 * life. It logs, and tells `onConnectionLost` (a statement's answer may have
 * been lost with the connection: src/queue.ts retires the runner); pg also
 * fails the client's queries with the error, and whoever holds the client
 * sees it there.
 */
export function createQueuePool(opts: { connectionString: string; max: number; genericPlans: boolean; logger: Pino; onConnectionLost?: () => void }): pg.Pool {
  const pool = new pg.Pool({
    connectionString: opts.connectionString,
    max: opts.max,
    application_name: "receipts-queue",
    // A startup option: a pooler that refuses startup options (PgBouncer
    // without ignore_startup_parameters) needs genericPlans off.
    ...(opts.genericPlans ? { options: "-c plan_cache_mode=force_generic_plan" } : {}),
  });
  pool.on("error", (err) => {
    opts.logger.warn({ err }, "idle queue connection lost");
    opts.onConnectionLost?.();
  });
  pool.on("connect", (client) => {
    client.on("error", (err) => {
      opts.logger.warn({ err }, "queue connection lost");
      opts.onConnectionLost?.();
    });
  });
  return pool;
}
