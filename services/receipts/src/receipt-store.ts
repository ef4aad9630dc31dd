import type { Database } from "@platform/database";

/** The task the queue runs for one receipt; enqueue_receipt (migrations/001) adds the first job. */
export const sendReceiptTask = "send_receipt";
/** One live job per receipt: a re-queue replaces a waiting job instead of adding a second. */
export const jobKeyOf = (orderId: string) => `receipt:${orderId}`;

/**
 * The receipts table (schema receipts). Each state change is one
 * conditional statement, so a job that runs twice, or two runs at once,
 * cannot send or count a receipt twice: only the run whose UPDATE found the
 * row still `pending` moves it on.
 *
 * Each change is a single statement that commits on its own (`session`):
 * one round trip, where BEGIN + SET LOCAL statement_timeout, the statement
 * and COMMIT took three, for the same atomicity (docs/outbox.md, "What an
 * order's receipt costs the database"). The job's deadline still stops a
 * statement, by the client's cancel request, as for any statement of the
 * platform; no statement_timeout is set outside a transaction.
 */
export class ReceiptStore {
  constructor(private readonly db: Pick<Database, "session">) {}

  /** Counts an attempt; undefined when the receipt is no longer pending (already sent or failed, or unknown). */
  async startAttempt(orderId: string): Promise<number | undefined> {
    const r = await this.db.session((tx) =>
      tx.query<{ attempts: number }>(
        `UPDATE receipts.receipts SET attempts = attempts + 1, updated_at = now()
          WHERE order_id = $1 AND state = 'pending' RETURNING attempts`,
        [orderId],
      ),
    );
    return r.rows[0]?.attempts;
  }

  /** pending -> sent; false when another run got there first. */
  async markSent(orderId: string, messageId: string): Promise<boolean> {
    const r = await this.db.session((tx) =>
      tx.query(
        `UPDATE receipts.receipts SET state = 'sent', message_id = $2, sent_at = now(), last_error = NULL, updated_at = now()
          WHERE order_id = $1 AND state = 'pending'`,
        [orderId, messageId],
      ),
    );
    return r.rowCount === 1;
  }

  /**
   * Records the failure and queues the next attempt `delayMs` from now, in
   * one statement: a retry is never lost between the two. The running
   * job keeps its key only until this commits (graphile-worker moves the
   * key to the new job), then completes.
   */
  async scheduleRetry(orderId: string, error: string, delayMs: number): Promise<void> {
    await this.db.session((tx) =>
      tx.query(
        `WITH failed AS (
           UPDATE receipts.receipts SET last_error = $5, updated_at = now() WHERE order_id = $2 AND state = 'pending'
         )
         SELECT receipts.add_job($1, json_build_object('orderId', $2::uuid), run_at := now() + make_interval(secs => $3::float8 / 1000), job_key := $4, max_attempts := 10)`,
        [sendReceiptTask, orderId, delayMs, jobKeyOf(orderId), error],
      ),
    );
  }

  /** pending -> failed: the retry budget is spent. */
  async markFailed(orderId: string, error: string): Promise<boolean> {
    const r = await this.db.session((tx) =>
      tx.query(`UPDATE receipts.receipts SET state = 'failed', last_error = $2, updated_at = now() WHERE order_id = $1 AND state = 'pending'`, [
        orderId,
        error,
      ]),
    );
    return r.rowCount === 1;
  }
}
