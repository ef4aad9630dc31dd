import { toBinary } from "@bufbuild/protobuf";
import { ordersV1 } from "@platform/proto";

/**
 * The statements of one order, shared by the orders service
 * (order-store.ts), the bench's plain Connect chain (lab/plain-chain) and its
 * database ceiling (lab/bench/db-ceiling.ts): the bench compares the same SQL
 * on every side, so it is written once.
 */

/**
 * Order, lines, (with a key, $12 <> '') the idempotency record, and the
 * receipt's row (receipts.enqueue_receipt, the receipts service's outbox: one
 * insert): one statement. `stored` is false when a live record holds the key.
 *
 * $1 id, $2 customer, $3 currency, $4 total, $5 created_at, $6-$11 the lines'
 * sku, name, quantity, currency, unit price, line total (arrays), $12 key,
 * $13 request hash, $14 stored response, $15 retention hours.
 */
export const insertOrderStatement = `WITH o AS (
     INSERT INTO orders.orders (id, customer_id, status, currency_code, total_minor, created_at)
     VALUES ($1, $2, 'PLACED', $3, $4, $5)
   ), i AS (
     INSERT INTO orders.order_items (order_id, line_no, sku, name, quantity, currency_code, unit_price_minor, line_total_minor)
     SELECT $1, n, sku, name, qty, cur, unit, line
       FROM unnest($6::text[], $7::text[], $8::int[], $9::text[], $10::bigint[], $11::bigint[])
            WITH ORDINALITY AS t(sku, name, qty, cur, unit, line, n)
   ), k AS (
     INSERT INTO orders.idempotency_records AS r (key, request_hash, order_id, response, expires_at)
     SELECT $12::text, $13, $1, $14, now() + make_interval(hours => $15) WHERE $12::text <> ''
     ON CONFLICT (key) DO UPDATE
       SET request_hash = excluded.request_hash, order_id = excluded.order_id, response = excluded.response,
           created_at = now(), expires_at = excluded.expires_at
       WHERE r.expires_at < now()
     RETURNING 1
   )
   -- The transactional outbox: the receipt's row commits with the
   -- order or not at all (a key found taken rolls back both).
   -- Nothing slow happens here: the receipts relay sends it later.
   SELECT $12::text = '' OR EXISTS (SELECT 1 FROM k) AS stored, receipts.enqueue_receipt($1) AS queued`;

/**
 * `insertOrderStatement`'s parameters for `order` as stored (`stored`, its
 * response bytes), kept `retentionHours` under `key` ("" for none).
 */
export function insertOrderParams(
  order: ordersV1.Order,
  stored: ordersV1.Order,
  createdAt: Date,
  key: string,
  requestHash: string,
  retentionHours: number,
): unknown[] {
  return [
    order.id,
    order.customerId,
    order.total!.currencyCode,
    order.total!.amountMinor.toString(),
    createdAt,
    order.items.map((i) => i.sku),
    order.items.map((i) => i.name),
    order.items.map((i) => i.quantity),
    order.items.map((i) => i.unitPrice!.currencyCode),
    order.items.map((i) => i.unitPrice!.amountMinor.toString()),
    order.items.map((i) => i.lineTotal!.amountMinor.toString()),
    key,
    requestHash,
    Buffer.from(toBinary(ordersV1.OrderSchema, stored)),
    retentionHours,
  ];
}

/** The order ($1) with its lines and its receipt's state, one row per line in order. */
export const getOrderStatement = `SELECT o.id, o.customer_id, o.currency_code, o.total_minor, o.created_at,
          i.sku, i.name, i.quantity, i.currency_code AS line_currency_code, i.unit_price_minor, i.line_total_minor,
          r.state AS receipt_state, r.attempts AS receipt_attempts
     FROM orders.orders o JOIN orders.order_items i ON i.order_id = o.id
     LEFT JOIN LATERAL receipts.receipt_status(o.id) r ON true
    WHERE o.id = $1
    ORDER BY i.line_no`;
