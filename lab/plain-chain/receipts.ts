/**
 * Plain receipts relay: the platform's receipt work (services/receipts) with
 * its statements (receipt-statements.ts) and its defaults (batch size, poll
 * interval, lease, sends at once), on the receipts schema of the plain
 * chain's database (plain-database.ts), around calls to the plain mailer.
 * No deadline, no breaker, no bulkhead, no lock_timeout, no pause after a
 * failure: a failed send is retried after a plain exponential backoff.
 * Serves nothing (PORT is unused); MAILER_URL is the plain mailer.
 */
import { mailerV1 } from "@platform/proto";
import {
  type ClaimedReceipt,
  type DeliveryOutcome,
  claimStatement,
  completeParams,
  completeStatement,
} from "../../services/receipts/src/receipt-statements.js";
import { closer, grpcClient, requiredEnv, runPlainService } from "./plain-runtime.js";
import { plainPool, transaction } from "./plain-transaction.js";

/** services/receipts' defaults: RECEIPTS_BATCH_SIZE, RECEIPTS_CONCURRENCY, RECEIPTS_POLL_INTERVAL_MS, RECEIPTS_LEASE_MS, DB_POOL_MAX. */
const batchSize = 100;
const concurrency = 8;
const pollIntervalMs = 50;
const leaseMs = 30_000;
const connections = 2;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

runPlainService("plain-receipts", async () => {
  const db = plainPool(requiredEnv("DATABASE_URL"), "plain-receipts", connections);
  const mailer = grpcClient(mailerV1.MailerService, requiredEnv("MAILER_URL"));
  let stopped = false;

  const deliver = async (claimed: ClaimedReceipt[]): Promise<DeliveryOutcome[]> => {
    const outcomes: DeliveryOutcome[] = [];
    let next = 0;
    const lane = async () => {
      while (next < claimed.length) {
        const { orderId, attempts } = claimed[next++]!;
        try {
          const res = await mailer.sendReceipt({ idempotencyKey: orderId, orderId });
          outcomes.push({ kind: "sent", orderId, attempts, messageId: res.messageId });
        } catch (e) {
          outcomes.push({ kind: "retry", orderId, attempts, error: String(e), delayMs: 1000 * 2 ** Math.min(attempts, 6) });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, claimed.length) }, lane));
    return outcomes;
  };

  const loop = async () => {
    while (!stopped) {
      try {
        const claimed = await transaction(db, (c) => c.query<{ order_id: string; attempts: number }>(claimStatement, [batchSize, leaseMs]));
        const batch = claimed.rows.map((r) => ({ orderId: r.order_id, attempts: r.attempts }));
        if (batch.length > 0) {
          const outcomes = await deliver(batch);
          await transaction(db, (c) => c.query(completeStatement, completeParams(outcomes)));
        }
        if (batch.length < batchSize) await sleep(pollIntervalMs);
      } catch {
        // The database went away: its leases bring the receipts back.
        await sleep(pollIntervalMs);
      }
    }
  };
  const running = loop();
  return closer(
    [],
    async () => {
      stopped = true;
      await running;
    },
    () => db.end(),
  );
});
