import { setTimeout as sleep } from "node:timers/promises";
import type { Database } from "@platform/database";

/**
 * Whether this service's role may call receipts.enqueue_receipt: the
 * receipts service creates it (its migrations) and grants it at start.
 * Read from the catalogues, which every role may read, so that a missing
 * schema or grant is "not yet" rather than an error.
 */
const interfaceReady = `
  SELECT EXISTS (
    SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
     WHERE n.nspname = 'receipts' AND p.proname = 'enqueue_receipt'
       AND has_schema_privilege(n.oid, 'USAGE') AND has_function_privilege(p.oid, 'EXECUTE')
  ) AS ok`;

/**
 * Waits, within `budgetMs`, until orders may queue receipts: every order's
 * transaction calls enqueue_receipt, so orders is not ready before it can
 * (the receipts worker starting for the first time, beside it). Once
 * installed, the interface stays: the worker being down later stops no
 * order, its receipts wait in the outbox.
 */
export async function waitForReceiptsInterface(
  db: Pick<Database, "transaction">,
  opts: { budgetMs: number; signal: AbortSignal; pollMs?: number; logger: { warn(o: object, m: string): void } },
): Promise<void> {
  const until = performance.now() + opts.budgetMs;
  let warned = false;
  for (;;) {
    opts.signal.throwIfAborted();
    const ok = await db
      .transaction((tx) => tx.query<{ ok: boolean }>(interfaceReady), { readOnly: true })
      .then(
        (r) => r.rows[0]?.ok === true,
        () => false,
      );
    if (ok) return;
    if (performance.now() >= until) {
      throw new Error(`receipts.enqueue_receipt is not callable after ${opts.budgetMs} ms: is the receipts service deployed (docs/outbox.md)?`);
    }
    if (!warned) opts.logger.warn({}, "waiting for the receipts service's queue (receipts.enqueue_receipt)");
    warned = true;
    await sleep(opts.pollMs ?? 250, undefined, { signal: opts.signal });
  }
}
