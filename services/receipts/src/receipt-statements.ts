/**
 * The relay's two statements, shared by the receipts service
 * (receipt-batches.ts), the bench's plain chain (lab/plain-chain/receipts.ts)
 * and the outbox cost tool: every side does the same receipt work in
 * PostgreSQL, so it is written once. Their SQL is in two functions of the
 * receipts schema, whose plans PostgreSQL keeps per connection.
 */

/** A receipt a claim handed to its relay: its order, and the attempt this is (counted by the claim). */
export interface ClaimedReceipt {
  orderId: string;
  attempts: number;
}

/**
 * Claims up to $1 due receipts for $2 ms (receipts.claim_receipts,
 * migrations/004): counts their attempt and leases them, oldest due first.
 * `FOR UPDATE SKIP LOCKED` lets relays claim side by side without waiting on
 * each other; a leased receipt is skipped until its lease ends, so one that
 * a dead relay held is claimed again then. The statement commits at once: no
 * transaction stays open while the receipts are sent.
 */
export const claimStatement = "SELECT order_id, attempts FROM receipts.claim_receipts($1, $2)";

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
 * Writes a batch's outcomes, one per row of the arrays $1..$6
 * (receipts.complete_receipts, migrations/004), and ends their leases, in one
 * statement. Only a pending receipt changes, so a receipt is marked sent (or
 * failed) once. A retry, a failure or a release applies only while the
 * receipt's attempts are still this claim's (no later claim took it over);
 * a send always counts: the mail went out. Returns the receipts it changed.
 */
export const completeStatement = "SELECT order_id FROM receipts.complete_receipts($1, $2, $3, $4, $5, $6)";

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
