import { create, fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Database, Tx } from "@platform/database";
import { ordersV1 } from "@platform/proto";
import { getOrderStatement, insertOrderParams, insertOrderStatement } from "./order-statements.js";

export interface IdempotencyRecord {
  requestHash: string;
  order: ordersV1.Order;
}

export type InsertOutcome =
  | { kind: "created"; order: ordersV1.Order }
  /** Another request stored this key first; nothing of ours was written. */
  | { kind: "key_taken"; record: IdempotencyRecord };

/** One line of an order, with the order's own columns repeated. */
interface OrderLineRow {
  id: string;
  customer_id: string;
  currency_code: string;
  total_minor: string;
  created_at: Date;
  sku: string;
  name: string;
  quantity: number;
  line_currency_code: string;
  unit_price_minor: string;
  line_total_minor: string;
  /** Null for an order from before receipts existed. */
  receipt_state: "pending" | "sent" | "failed" | null;
  receipt_attempts: number | null;
}

const receiptStates = {
  pending: ordersV1.ReceiptState.PENDING,
  sent: ordersV1.ReceiptState.SENT,
  failed: ordersV1.ReceiptState.FAILED,
} as const;

/** Thrown inside the insert's transaction to roll it back when the key is taken. */
class KeyTaken extends Error {}

/** The orders schema: every write of one order happens in one transaction. */
export class OrderStore {
  constructor(private readonly db: Database) {}

  /** The live (unexpired) record for a key, or undefined. */
  async findByKey(key: string): Promise<IdempotencyRecord | undefined> {
    return this.db.transaction((tx) => readRecord(tx, key), { readOnly: true });
  }

  /**
   * Writes the order, its lines, (with a key) the idempotency record with
   * the response, and the receipt's row (receipts.enqueue_receipt, the
   * receipts service's outbox), atomically, as one statement: one round
   * trip between BEGIN and COMMIT. If the key is held by a live record (also one that a
   * concurrent request committed first: the upsert waits for it) nothing is
   * kept and that record is returned. An expired record no longer protects
   * its key and is replaced.
   */
  async insert(order: ordersV1.Order, key: string, requestHash: string, retentionHours: number): Promise<InsertOutcome> {
    // Set here, not by the database, because the stored response must carry it.
    const createdAt = new Date();
    // Its receipt is written in this same transaction (below), so the answer can say so.
    const stored = create(ordersV1.OrderSchema, {
      ...order,
      createdAt: createdAt.toISOString(),
      receipt: create(ordersV1.ReceiptSchema, { state: ordersV1.ReceiptState.PENDING, attempts: 0 }),
    });
    try {
      return await this.db.transaction(async (tx) => {
        const r = await tx.query<{ stored: boolean }>(insertOrderStatement, insertOrderParams(order, stored, createdAt, key, requestHash, retentionHours));
        // The key is live elsewhere: throwing rolls our order back.
        if (!r.rows[0]!.stored) throw new KeyTaken();
        return { kind: "created", order: stored } as const;
      });
    } catch (e) {
      if (e instanceof KeyTaken) {
        const record = await this.findByKey(key);
        if (record) return { kind: "key_taken", record };
        // Expired between the two transactions: vanishingly rare; the caller's retry stores it.
        throw new ConnectError(`idempotency key ${JSON.stringify(key)} expired while in use; retry`, Code.Aborted);
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

  /** The order with its lines and its receipt's state, in one statement (lines in order; every order has at least one). */
  async get(id: string): Promise<ordersV1.Order | undefined> {
    return this.db.transaction(
      async (tx) => {
        const r = await tx.query<OrderLineRow>(getOrderStatement, [id]);
        const row = r.rows[0];
        if (!row) return undefined;
        return create(ordersV1.OrderSchema, {
          id: row.id,
          customerId: row.customer_id,
          status: ordersV1.OrderStatus.PLACED,
          total: { currencyCode: row.currency_code, amountMinor: BigInt(row.total_minor) },
          createdAt: row.created_at.toISOString(),
          ...(row.receipt_state === null ? {} : { receipt: { state: receiptStates[row.receipt_state], attempts: row.receipt_attempts ?? 0 } }),
          items: r.rows.map((i) => ({
            sku: i.sku,
            name: i.name,
            quantity: i.quantity,
            unitPrice: { currencyCode: i.line_currency_code, amountMinor: BigInt(i.unit_price_minor) },
            lineTotal: { currencyCode: i.line_currency_code, amountMinor: BigInt(i.line_total_minor) },
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
  // Rows written before orders.v1 had its own Order hold checkout.v1.Order
  // bytes: the same field numbers and types, so they decode as they are
  // (test/proto-twins.test.ts, and the orders store's spec with such a row).
  return { requestHash: row.request_hash, order: fromBinary(ordersV1.OrderSchema, row.response) };
}
