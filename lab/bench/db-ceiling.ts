/**
 * The database alone: one PlaceOrder's SQL, statement for statement and
 * transaction for transaction, sent straight from a pg pool (a pgbench-like
 * loop in Node). Whatever the chains reach per second is a fraction of this.
 *
 *   1. pricing: prices of the order's SKUs   (BEGIN READ ONLY; SET LOCAL statement_timeout / SELECT / COMMIT)
 *   2. orders: order, lines, idempotency record and the receipt's row, one
 *      statement (services/orders/src/order-statements.ts)
 *                                            (BEGIN; SET LOCAL statement_timeout / INSERT ... enqueue_receipt / COMMIT)
 *
 * It runs on the plain chain's database (lab/plain-chain/plain-database.ts),
 * whose receipts relay claims and completes the receipts it writes as it
 * does the plain chain's: the outbox's work in PostgreSQL (the receipt's
 * row, its share of a batch's claim and of its completion) is part of the
 * ceiling, as it is part of every order on both chains.
 */
import { createHash, randomUUID } from "node:crypto";
import pg from "pg";
import { insertOrderStatement } from "../../services/orders/src/order-statements.js";
import { ceilingApplicationName } from "./backend-chain.js";

/** What the services' transactions send with BEGIN (packages/database tx.ts); the value is a deadline's remaining time. */
const statementTimeoutMs = 4995;

async function tx<T>(client: pg.PoolClient, readOnly: boolean, fn: () => Promise<T>): Promise<T> {
  await client.query(`BEGIN${readOnly ? " READ ONLY" : ""}; SET LOCAL statement_timeout = ${statementTimeoutMs}`);
  try {
    const r = await fn();
    await client.query("COMMIT");
    return r;
  } catch (e) {
    await client.query("ROLLBACK").catch(() => {});
    throw e;
  }
}

/** A pool as large as the concurrency (pgbench -c N opens N connections). */
export function ceilingPool(databaseUrl: string, concurrency: number): pg.Pool {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: concurrency, application_name: ceilingApplicationName });
  pool.on("error", () => {});
  return pool;
}

export async function placeOrderStatements(pool: pg.Pool, customerId: string, items: Array<{ sku: string; quantity: number }>): Promise<void> {
  const key = randomUUID();
  const orderId = randomUUID();
  // Each transaction on whatever connection is free, as two services with their own pools would.
  const run = async <T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> => {
    const c = await pool.connect();
    try {
      return await fn(c);
    } finally {
      c.release();
    }
  };
  const skus = [...new Set(items.map((i) => i.sku))];
  const prices = await run((c) =>
    tx(c, true, () =>
      c.query<{ sku: string; name: string; currency_code: string; unit_price_minor: string }>(
        "SELECT sku, name, currency_code, unit_price_minor FROM pricing.products WHERE sku = ANY($1::text[])",
        [skus],
      ),
    ),
  );
  const bySku = new Map(prices.rows.map((r) => [r.sku, r]));
  const lines = items.map((i) => {
    const p = bySku.get(i.sku);
    if (!p) throw new Error(`db ceiling: unknown sku ${i.sku}`);
    return { ...i, name: p.name, currency: p.currency_code, unit: BigInt(p.unit_price_minor), line: BigInt(p.unit_price_minor) * BigInt(i.quantity) };
  });
  const total = lines.reduce((s, l) => s + l.line, 0n);
  const currency = lines[0]?.currency ?? "USD";
  const hash = createHash("sha256")
    .update(JSON.stringify([customerId, items.map((i) => [i.sku, i.quantity])]))
    .digest("hex");
  await run((c) =>
    tx(c, false, () =>
      c.query(insertOrderStatement, [
        orderId,
        customerId,
        currency,
        total.toString(),
        new Date(),
        lines.map((l) => l.sku),
        lines.map((l) => l.name),
        lines.map((l) => l.quantity),
        lines.map((l) => l.currency),
        lines.map((l) => l.unit.toString()),
        lines.map((l) => l.line.toString()),
        key,
        hash,
        // The stored response is the serialized order in the services; a blob of that size here.
        Buffer.alloc(200, 1),
        24,
      ]),
    ),
  );
}
