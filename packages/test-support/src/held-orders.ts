/**
 * Orders placed straight into the database whose receipt is pending and not
 * due for an hour: nothing changes them but whoever wrote them, so a
 * WatchOrder stream on one stays open and idle (but for heartbeats) until
 * its receipt is changed by hand (`sendHeldReceipt`). For the stream tests
 * and the lab's watchers. `query` runs SQL as a superuser.
 */
export async function insertHeldOrders(
  query: (text: string, values: unknown[]) => Promise<unknown>,
  ids: readonly string[],
  customerId: string,
): Promise<void> {
  await query(
    `WITH o AS (INSERT INTO orders.orders (id, customer_id, status, currency_code, total_minor, created_at)
                SELECT id, $2, 'PLACED', 'USD', 1200, now() FROM unnest($1::uuid[]) AS id),
          i AS (INSERT INTO orders.order_items (order_id, line_no, sku, name, quantity, currency_code, unit_price_minor, line_total_minor)
                SELECT id, 1, 'MUG-CERAMIC', 'Ceramic mug', 1, 'USD', 1200, 1200 FROM unnest($1::uuid[]) AS id)
     INSERT INTO receipts.receipts (order_id, due_at) SELECT id, now() + interval '1 hour' FROM unnest($1::uuid[]) AS id`,
    [ids, customerId],
  );
}

/** A held order's receipt sent, as the receipts relay records a delivery. */
export async function sendHeldReceipt(query: (text: string, values: unknown[]) => Promise<unknown>, id: string): Promise<void> {
  await query("UPDATE receipts.receipts SET state = 'sent', attempts = 1, message_id = 'held-order', sent_at = now() WHERE order_id = $1", [id]);
}
