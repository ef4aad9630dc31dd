/**
 * The relay's two statements, shared by the receipts service
 * (receipt-batches.ts), the bench's plain chain (lab/plain-chain/receipts.ts)
 * and the outbox cost tool: every side does the same receipt work in
 * PostgreSQL, so it is written once.
 */

/** A receipt a claim handed to its relay: its order, and the attempt this is (counted by the claim). */
export interface ClaimedReceipt {
  orderId: string;
  attempts: number;
}

/**
 * Claims up to $1 due receipts for $2 ms: counts their attempt and leases
 * them. SKIP LOCKED lets relays claim side by side without waiting on each
 * other; a leased receipt is skipped until its lease ends, so one that a dead
 * relay held is claimed again then. Oldest due first.
 */
export const claimStatement = `UPDATE receipts.receipts r
    SET attempts = r.attempts + 1, leased_until = now() + make_interval(secs => $2::float8 / 1000), updated_at = now()
   FROM (SELECT order_id FROM receipts.receipts
          WHERE state = 'pending' AND due_at <= now() AND (leased_until IS NULL OR leased_until <= now())
          ORDER BY due_at LIMIT $1 FOR UPDATE SKIP LOCKED) due
  WHERE r.order_id = due.order_id
  RETURNING r.order_id, r.attempts`;

/** What became of one claimed receipt. */
export type DeliveryOutcome =
  | { kind: "sent"; orderId: string; attempts: number; messageId: string }
  /** The mailer failed; the next attempt is due `delayMs` from now. */
  | { kind: "retry"; orderId: string; attempts: number; error: string; delayMs: number }
  /** The mailer failed and the budget of attempts is spent. */
  | { kind: "failed"; orderId: string; attempts: number; error: string }
  /** Not attempted (the relay held back or stopped): the claim's attempt is given back. */
  | { kind: "released"; orderId: string; attempts: number };

/**
 * Writes a batch's outcomes, one row each of unnest($1..$6), and ends their
 * leases. Only a pending receipt changes, so a receipt is marked sent (or
 * failed) once. A retry, a failure or a release applies only while the
 * receipt's attempts are still this claim's (no later claim took it over);
 * a send always counts: the mail went out. Returns the rows it changed.
 */
export const completeStatement = `UPDATE receipts.receipts r
    SET state = CASE v.kind WHEN 'sent' THEN 'sent' WHEN 'failed' THEN 'failed' ELSE 'pending' END,
        message_id = CASE WHEN v.kind = 'sent' THEN v.message_id ELSE r.message_id END,
        sent_at = CASE WHEN v.kind = 'sent' THEN now() ELSE r.sent_at END,
        last_error = CASE v.kind WHEN 'sent' THEN NULL WHEN 'released' THEN r.last_error ELSE v.error END,
        attempts = CASE WHEN v.kind = 'released' THEN r.attempts - 1 ELSE r.attempts END,
        due_at = CASE WHEN v.kind = 'retry' THEN now() + make_interval(secs => v.delay_ms::float8 / 1000) ELSE r.due_at END,
        leased_until = NULL,
        updated_at = now()
   FROM unnest($1::uuid[], $2::text[], $3::int[], $4::text[], $5::text[], $6::int[]) AS v(order_id, kind, attempts, message_id, error, delay_ms)
  WHERE r.order_id = v.order_id AND r.state = 'pending' AND (v.kind = 'sent' OR r.attempts = v.attempts)
  RETURNING r.order_id`;

/** `completeStatement`'s parameters for `outcomes`. */
export function completeParams(outcomes: readonly DeliveryOutcome[]): unknown[] {
  return [
    outcomes.map((o) => o.orderId),
    outcomes.map((o) => o.kind),
    outcomes.map((o) => o.attempts),
    outcomes.map((o) => (o.kind === "sent" ? o.messageId : null)),
    outcomes.map((o) => (o.kind === "retry" || o.kind === "failed" ? o.error : null)),
    outcomes.map((o) => (o.kind === "retry" ? o.delayMs : null)),
  ];
}
