import pg from "pg";
import { parsePrometheus } from "../metrics/prometheus.js";

/**
 * The outbox scenario's evidence: every order of the run got its receipt,
 * and each receipt went out once. Counted once the queue has drained (no
 * receipt pending anywhere) or the wait ran out.
 */
export interface ReceiptCounts {
  /** This run's orders (its customers). */
  orders: number;
  /** Of these: receipt sent / still pending / failed (budget spent) / no receipt row at all. */
  sent: number;
  pending: number;
  failed: number;
  withoutReceipt: number;
  /** The most attempts any of them needed (above 1: the outage reached the worker). */
  maxAttempts: number;
  /** Whole database (warm-up and capacity orders too): receipts in state sent, and their distinct message ids. */
  sentInDatabase: number;
  distinctMessages: number;
  /** What the mailer itself counted: receipts that went out, and repeated keys it answered without sending. */
  mailerSent: number;
  mailerDuplicates: number;
  /** Every order has its receipt, sent, and the mailer sent exactly as many receipts as the database holds as sent. */
  exactlyOnce: boolean;
  /** Seconds from the trigger's end until no receipt was pending; null when the wait ran out. */
  drainedAfterSec: number | null;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function mailerCounts(adminUrl: string): Promise<{ sent: number; duplicate: number }> {
  const res = await fetch(`${adminUrl}/metrics`, { signal: AbortSignal.timeout(5000) });
  const samples = parsePrometheus(await res.text()).filter((s) => s.name === "mailer_receipts_total");
  const of = (outcome: string) => samples.filter((s) => s.labels["outcome"] === outcome).reduce((a, s) => a + s.value, 0);
  return { sent: of("sent"), duplicate: of("duplicate") };
}

/** Waits (bounded) until no receipt is pending, then counts. */
export async function countReceipts(opts: {
  databaseUrl: string;
  mailerAdminUrl: string;
  customerPrefix: string;
  triggerOffAt: number;
  maxWaitMs: number;
}): Promise<ReceiptCounts> {
  const client = new pg.Client({ connectionString: opts.databaseUrl });
  client.on("error", () => {});
  await client.connect();
  try {
    const until = Date.now() + opts.maxWaitMs;
    let drainedAt: number | undefined;
    while (Date.now() < until) {
      const r = await client.query<{ n: number }>("SELECT count(*)::int AS n FROM receipts.receipts WHERE state = 'pending'");
      if (r.rows[0]!.n === 0) {
        drainedAt = Date.now();
        break;
      }
      await sleep(500);
    }
    const run = await client.query<{ orders: number; sent: number; pending: number; failed: number; without_receipt: number; max_attempts: number }>(
      `SELECT count(*)::int AS orders,
              count(*) FILTER (WHERE r.state = 'sent')::int AS sent,
              count(*) FILTER (WHERE r.state = 'pending')::int AS pending,
              count(*) FILTER (WHERE r.state = 'failed')::int AS failed,
              count(*) FILTER (WHERE r.order_id IS NULL)::int AS without_receipt,
              coalesce(max(r.attempts), 0)::int AS max_attempts
         FROM orders.orders o LEFT JOIN receipts.receipts r ON r.order_id = o.id
        WHERE o.customer_id LIKE $1 || '%'`,
      [opts.customerPrefix],
    );
    const all = await client.query<{ sent: number; messages: number }>(
      "SELECT count(*)::int AS sent, count(DISTINCT message_id)::int AS messages FROM receipts.receipts WHERE state = 'sent'",
    );
    const mailer = await mailerCounts(opts.mailerAdminUrl);
    const c = run.rows[0]!;
    const a = all.rows[0]!;
    return {
      orders: c.orders,
      sent: c.sent,
      pending: c.pending,
      failed: c.failed,
      withoutReceipt: c.without_receipt,
      maxAttempts: c.max_attempts,
      sentInDatabase: a.sent,
      distinctMessages: a.messages,
      mailerSent: mailer.sent,
      mailerDuplicates: mailer.duplicate,
      exactlyOnce: c.orders > 0 && c.sent === c.orders && mailer.sent === a.sent && a.messages === a.sent,
      drainedAfterSec: drainedAt === undefined ? null : Math.round((drainedAt - opts.triggerOffAt) / 100) / 10,
    };
  } finally {
    await client.end().catch(() => {});
  }
}
