import type { Database, Tx } from "@platform/database";
import { createScope, remainingMs, runInScope } from "@platform/resilience";
import { type ClaimedReceipt, type DeliveryOutcome, claimStatement, completeParams, completeStatement } from "./receipt-statements.js";

/**
 * The relay's statements on receipts.receipts. Each runs in a transaction
 * of its own under a deadline of its own (`statementTimeoutMs`): the
 * platform's transaction sets statement_timeout from it at BEGIN, and
 * lock_timeout is set here from what is left of it, so that a table locked
 * from outside (a migration's ACCESS EXCLUSIVE, say) makes the statement give
 * up within its deadline instead of holding the relay's connection for as
 * long as the lock is held. The relay tries again later; the receipts wait.
 */
export class ReceiptBatches {
  constructor(
    private readonly db: Pick<Database, "transaction">,
    private readonly opts: { statementTimeoutMs: number; lockTimeoutReserveMs: number },
  ) {}

  /** Claims up to `limit` due receipts, leased for `leaseMs` (receipt-statements.ts). */
  async claim(limit: number, leaseMs: number): Promise<ClaimedReceipt[]> {
    const r = await this.statement("receipts/claim", (tx) => tx.query<{ order_id: string; attempts: number }>(claimStatement, [limit, leaseMs]));
    return r.rows.map((row) => ({ orderId: row.order_id, attempts: row.attempts }));
  }

  /** Writes the outcomes of a batch in one statement; returns the order ids whose receipt it changed. */
  async complete(outcomes: readonly DeliveryOutcome[]): Promise<Set<string>> {
    if (outcomes.length === 0) return new Set();
    const r = await this.statement("receipts/complete", (tx) => tx.query<{ order_id: string }>(completeStatement, completeParams(outcomes)));
    return new Set(r.rows.map((row) => row.order_id));
  }

  private async statement<T>(procedure: string, fn: (tx: Tx) => Promise<T>): Promise<T> {
    const scope = createScope({ timeoutMs: this.opts.statementTimeoutMs, requestId: "", procedure, criticality: "sheddable" });
    try {
      return await runInScope(scope, () =>
        this.db.transaction(async (tx) => {
          // The statement's own lock wait ends with its deadline (less the time to report it), as its statement_timeout does.
          const lockTimeoutMs = Math.max(1, Math.floor(remainingMs(scope) - this.opts.lockTimeoutReserveMs));
          await tx.query(`SET LOCAL lock_timeout = ${lockTimeoutMs}`);
          return fn(tx);
        }),
      );
    } finally {
      scope.dispose();
    }
  }
}
