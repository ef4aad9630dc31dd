/**
 * The database alone: one PlaceOrder's SQL, statement for statement and
 * transaction for transaction, sent straight from a pg pool (a pgbench-like
 * loop in Node). Whatever the chains reach per second is a fraction of this.
 *
 *   1. orders: is the idempotency key known?       (BEGIN READ ONLY; SELECT; COMMIT)
 *   2. pricing: prices of the order's SKUs          (BEGIN READ ONLY; SELECT; COMMIT)
 *   3. orders: store order, lines, idempotency key  (BEGIN; DELETE; INSERT x3; COMMIT)
 */
import { randomUUID } from "node:crypto";
import pg from "pg";

async function tx<T>(client: pg.PoolClient, begin: string, fn: () => Promise<T>): Promise<T> {
  await client.query(begin);
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
  const pool = new pg.Pool({ connectionString: databaseUrl, max: concurrency, application_name: "bench-db-ceiling" });
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
  await run((c) =>
    tx(c, "BEGIN READ ONLY", () => c.query("SELECT request_hash, response FROM orders.idempotency_records WHERE key = $1 AND expires_at >= now()", [key])),
  );
  const skus = items.map((i) => i.sku);
  const prices = await run((c) =>
    tx(c, "BEGIN READ ONLY", () =>
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
  await run((c) =>
    tx(c, "BEGIN", async () => {
      await c.query("DELETE FROM orders.idempotency_records WHERE key = $1 AND expires_at < now()", [key]);
      await c.query(
        `INSERT INTO orders.orders (id, customer_id, status, currency_code, total_minor)
         VALUES ($1, $2, 'PLACED', $3, $4) RETURNING created_at`,
        [orderId, customerId, currency, total.toString()],
      );
      await c.query(
        `INSERT INTO orders.order_items (order_id, line_no, sku, name, quantity, currency_code, unit_price_minor, line_total_minor)
         SELECT $1, n, sku, name, qty, cur, unit, line
           FROM unnest($2::text[], $3::text[], $4::int[], $5::text[], $6::bigint[], $7::bigint[])
                WITH ORDINALITY AS t(sku, name, qty, cur, unit, line, n)`,
        [
          orderId,
          lines.map((l) => l.sku),
          lines.map((l) => l.name),
          lines.map((l) => l.quantity),
          lines.map((l) => l.currency),
          lines.map((l) => l.unit.toString()),
          lines.map((l) => l.line.toString()),
        ],
      );
      // The stored response is the serialized order in the services; a blob of that size here.
      await c.query(
        `INSERT INTO orders.idempotency_records (key, request_hash, order_id, response, expires_at)
         VALUES ($1, $2, $3, $4, now() + make_interval(hours => $5))`,
        [key, "0".repeat(64), orderId, Buffer.alloc(200, 1), 24],
      );
    }),
  );
}
