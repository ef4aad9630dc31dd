import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { Database, Tx } from "@platform/database";
import { checkoutV1 } from "@platform/proto";

export interface IdempotencyRecord {
  requestHash: string;
  order: checkoutV1.Order;
}

export type InsertOutcome =
  | { kind: "created"; order: checkoutV1.Order }
  /** Another request stored this key first; nothing of ours was written. */
  | { kind: "key_taken"; record: IdempotencyRecord };

interface OrderRow {
  id: string;
  customer_id: string;
  status: string;
  currency_code: string;
  total_minor: string;
  created_at: Date;
}

interface ItemRow {
  sku: string;
  name: string;
  quantity: number;
  currency_code: string;
  unit_price_minor: string;
  line_total_minor: string;
}

const uniqueViolation = "23505";

/** The orders schema: every write of one order happens in one transaction. */
export class OrderStore {
  constructor(private readonly db: Database) {}

  /** The live (unexpired) record for a key, or undefined. */
  async findByKey(key: string): Promise<IdempotencyRecord | undefined> {
    return this.db.transaction((tx) => readRecord(tx, key), { readOnly: true });
  }

  /**
   * Writes the order, its lines and (with a key) the idempotency record with
   * the response, atomically. If the key is already taken (also by a
   * concurrent request that committed first) nothing is written and the
   * winner's record is returned.
   */
  async insert(order: checkoutV1.Order, key: string, requestHash: string, retentionHours: number): Promise<InsertOutcome> {
    try {
      return await this.db.transaction(async (tx) => {
        if (key !== "") {
          // An expired record no longer protects its key.
          await tx.query("DELETE FROM orders.idempotency_records WHERE key = $1 AND expires_at < now()", [key]);
        }
        const created = await tx.query<{ created_at: Date }>(
          `INSERT INTO orders.orders (id, customer_id, status, currency_code, total_minor)
           VALUES ($1, $2, 'PLACED', $3, $4) RETURNING created_at`,
          [order.id, order.customerId, order.total!.currencyCode, order.total!.amountMinor.toString()],
        );
        await tx.query(
          `INSERT INTO orders.order_items (order_id, line_no, sku, name, quantity, currency_code, unit_price_minor, line_total_minor)
           SELECT $1, n, sku, name, qty, cur, unit, line
             FROM unnest($2::text[], $3::text[], $4::int[], $5::text[], $6::bigint[], $7::bigint[])
                  WITH ORDINALITY AS t(sku, name, qty, cur, unit, line, n)`,
          [
            order.id,
            order.items.map((i) => i.sku),
            order.items.map((i) => i.name),
            order.items.map((i) => i.quantity),
            order.items.map((i) => i.unitPrice!.currencyCode),
            order.items.map((i) => i.unitPrice!.amountMinor.toString()),
            order.items.map((i) => i.lineTotal!.amountMinor.toString()),
          ],
        );
        const stored = create(checkoutV1.OrderSchema, { ...order, createdAt: created.rows[0]!.created_at.toISOString() });
        if (key !== "") {
          // A concurrent writer of the same key blocks here until the first
          // commits, then fails with a unique violation: we roll back.
          await tx.query(
            `INSERT INTO orders.idempotency_records (key, request_hash, order_id, response, expires_at)
             VALUES ($1, $2, $3, $4, now() + make_interval(hours => $5))`,
            [key, requestHash, order.id, Buffer.from(toBinary(checkoutV1.OrderSchema, stored)), retentionHours],
          );
        }
        return { kind: "created", order: stored } as const;
      });
    } catch (e) {
      if ((e as { code?: unknown }).code === uniqueViolation && (e as { constraint?: unknown }).constraint === "idempotency_records_pkey") {
        const record = await this.findByKey(key);
        if (record) return { kind: "key_taken", record };
      }
      throw e;
    }
  }

  /** Forgets expired idempotency records (a bounded batch); returns how many. */
  async purgeExpiredKeys(batch = 1000): Promise<number> {
    const r = await this.db.transaction((tx) =>
      tx.query(
        `DELETE FROM orders.idempotency_records WHERE key IN
           (SELECT key FROM orders.idempotency_records WHERE expires_at < now() LIMIT $1)`,
        [batch],
      ),
    );
    return r.rowCount ?? 0;
  }

  async get(id: string): Promise<checkoutV1.Order | undefined> {
    return this.db.transaction(
      async (tx) => {
        const o = await tx.query<OrderRow>(
          "SELECT id, customer_id, status, currency_code, total_minor, created_at FROM orders.orders WHERE id = $1",
          [id],
        );
        const row = o.rows[0];
        if (!row) return undefined;
        const items = await tx.query<ItemRow>(
          `SELECT sku, name, quantity, currency_code, unit_price_minor, line_total_minor
             FROM orders.order_items WHERE order_id = $1 ORDER BY line_no`,
          [id],
        );
        return create(checkoutV1.OrderSchema, {
          id: row.id,
          customerId: row.customer_id,
          status: checkoutV1.OrderStatus.PLACED,
          total: { currencyCode: row.currency_code, amountMinor: BigInt(row.total_minor) },
          createdAt: row.created_at.toISOString(),
          items: items.rows.map((i) => ({
            sku: i.sku,
            name: i.name,
            quantity: i.quantity,
            unitPrice: { currencyCode: i.currency_code, amountMinor: BigInt(i.unit_price_minor) },
            lineTotal: { currencyCode: i.currency_code, amountMinor: BigInt(i.line_total_minor) },
          })),
        });
      },
      { readOnly: true },
    );
  }
}

async function readRecord(tx: Tx, key: string): Promise<IdempotencyRecord | undefined> {
  const r = await tx.query<{ request_hash: string; response: Buffer }>(
    "SELECT request_hash, response FROM orders.idempotency_records WHERE key = $1 AND expires_at >= now()",
    [key],
  );
  const row = r.rows[0];
  if (!row) return undefined;
  return { requestHash: row.request_hash, order: fromBinary(checkoutV1.OrderSchema, row.response) };
}
