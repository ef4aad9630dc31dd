/**
 * Plain receipts worker: a plain graphile-worker runner on the receipts
 * schema of the plain chain's database (plain-database.ts), working the jobs
 * plain orders queues with receipts.enqueue_receipt in each order's
 * transaction, with the statements of services/receipts/src/receipt-store.ts
 * around a call to the plain mailer. No deadline, no breaker, no bulkhead,
 * no pause after failures: a failed job throws and graphile-worker retries
 * it with its own backoff. Serves nothing but its readiness (PORT is
 * unused); MAILER_URL is the plain mailer.
 */
import { run } from "graphile-worker";
import { mailerV1 } from "@platform/proto";
import { closer, grpcClient, requiredEnv, runPlainService } from "./plain-runtime.js";
import { plainPool } from "./plain-transaction.js";

/** services/receipts' defaults: RECEIPTS_CONCURRENCY, RECEIPTS_POLL_INTERVAL_MS, and DB_POOL_MAX less the queue's connections. */
const concurrency = 8;
const pollIntervalMs = 1000;
const bookkeepingConnections = 2;
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

runPlainService("plain-receipts", async () => {
  const databaseUrl = requiredEnv("DATABASE_URL");
  const db = plainPool(databaseUrl, "plain-receipts", bookkeepingConnections);
  const queuePool = plainPool(databaseUrl, "plain-receipts-queue", concurrency + 2, "-c plan_cache_mode=force_generic_plan");
  const mailer = grpcClient(mailerV1.MailerService, requiredEnv("MAILER_URL"));
  const runner = await run({
    pgPool: queuePool,
    schema: "receipts",
    concurrency,
    pollInterval: pollIntervalMs,
    noHandleSignals: true,
    // The platform's worker sets these and the generic plans above (services/receipts/src/queue.ts
    // `defaultTuning`; docs/outbox.md has why); they decide how jobs are fetched and completed, so the
    // plain worker sets them too: the same SQL on both sides. Without them this worker falls
    // behind under load and the bench credits the plain chain with receipts not yet sent.
    preset: { worker: { completeJobBatchDelay: 10, failJobBatchDelay: 0, localQueue: { size: concurrency + 1 } } },
    taskList: {
      async send_receipt(payload) {
        const orderId = (payload as { orderId?: unknown } | null)?.orderId;
        if (typeof orderId !== "string" || !uuid.test(orderId)) return;
        // Each step one statement that commits on its own, as services/receipts/src/receipt-store.ts does.
        const started = await db.query(
          `UPDATE receipts.receipts SET attempts = attempts + 1, updated_at = now()
            WHERE order_id = $1 AND state = 'pending' RETURNING attempts`,
          [orderId],
        );
        if (started.rowCount === 0) return;
        const res = await mailer.sendReceipt({ idempotencyKey: orderId, orderId });
        await db.query(
          `UPDATE receipts.receipts SET state = 'sent', message_id = $2, sent_at = now(), last_error = NULL, updated_at = now()
            WHERE order_id = $1 AND state = 'pending'`,
          [orderId, res.messageId],
        );
      },
    },
  });
  return closer(
    [],
    () => runner.stop(),
    () => queuePool.end(),
    () => db.end(),
  );
});
