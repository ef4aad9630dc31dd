import type { Database } from "@platform/database";
import type { Logger as Pino } from "@platform/runtime";
import { Logger, run, type Runner } from "graphile-worker";
import pg from "pg";
import { sendReceiptTask } from "./receipt-store.js";

/** The queue's tables and functions live in the service's own schema (migrations/001 says why). */
export const queueSchema = "receipts";

export interface Queue {
  runner: Runner;
  stop(): Promise<void>;
}

/**
 * Installs graphile-worker's schema (its own migrations, idempotent) and
 * starts `concurrency` job runners on a pool of their own: jobs arrive by
 * LISTEN/NOTIFY as their transaction commits, and a job scheduled for later
 * (a retry) is found by polling every `pollIntervalMs`.
 */
export async function startQueue(opts: {
  connectionString: string;
  concurrency: number;
  pollIntervalMs: number;
  sendReceipt: (payload: unknown) => Promise<unknown>;
  logger: Pino;
}): Promise<Queue> {
  // One connection per runner, one for LISTEN, one spare for bookkeeping.
  const pool = new pg.Pool({ connectionString: opts.connectionString, max: opts.concurrency + 2, application_name: "receipts-queue" });
  pool.on("error", (err) => opts.logger.warn({ err }, "idle queue connection lost"));
  const levels = { error: "error", warning: "warn", info: "debug", debug: "debug" } as const;
  const logger = new Logger((scope) => (level, message, meta) => opts.logger[levels[level]]({ queue: scope, ...meta }, message));
  try {
    const runner = await run({
      pgPool: pool,
      schema: queueSchema,
      concurrency: opts.concurrency,
      pollInterval: opts.pollIntervalMs,
      // runMain handles SIGTERM and drains; the runner is stopped in onShutdown.
      noHandleSignals: true,
      logger,
      taskList: {
        [sendReceiptTask]: async (payload) => {
          await opts.sendReceipt(payload);
        },
      },
    });
    return {
      runner,
      async stop() {
        await runner.stop();
        await pool.end();
      },
    };
  } catch (e) {
    await pool.end();
    throw e;
  }
}

/**
 * Lets each role in `roles` (the orders service's) call the two functions
 * that are this service's interface, and nothing else of its schema. Run
 * once the queue is installed, so a caller never finds enqueue_receipt
 * before add_job exists. A role that does not exist (a deployment where
 * every service shares one login) is skipped with a warning.
 */
export async function openInterface(db: Pick<Database, "transaction">, roles: readonly string[], logger: Pino): Promise<void> {
  await db.transaction(async (tx) => {
    for (const role of roles) {
      const r = await tx.query<{ grantable: boolean }>("SELECT rolname <> current_user AS grantable FROM pg_roles WHERE rolname = $1", [role]);
      if (r.rows[0]?.grantable !== true) {
        logger.warn({ role }, "no such role apart from this service's own: enqueue_receipt not granted to it");
        continue;
      }
      // The name was checked to be a plain identifier (config.ts).
      await tx.query(`GRANT USAGE ON SCHEMA ${queueSchema} TO ${role}`);
      await tx.query(`GRANT EXECUTE ON FUNCTION ${queueSchema}.enqueue_receipt(uuid), ${queueSchema}.receipt_status(uuid) TO ${role}`);
    }
  });
}
