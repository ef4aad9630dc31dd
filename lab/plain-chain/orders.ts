/**
 * Plain orders: the same work per call as services/orders (prices from
 * pricing outside any transaction, then order, lines, idempotency record
 * and the receipt's row (receipts.enqueue_receipt, sent by ./receipts.ts)
 * in one statement of one transaction; the key is looked up only when that
 * statement finds it taken), with the statements of
 * services/orders/src/order-statements.ts. Serves gRPC on h2c (PORT); calls
 * pricing at PRICING_URL.
 */
import { randomUUID, createHash } from "node:crypto";
import { create, fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { type commonV1, ordersV1, pricingV1 } from "@platform/proto";
import type pg from "pg";
import { closer, grpcClient, portEnv, requiredEnv, runPlainService, serveH2c } from "./plain-runtime.js";
import { getOrderStatement, insertOrderParams, insertOrderStatement } from "../../services/orders/src/order-statements.js";
import { plainPool, transaction } from "./plain-transaction.js";

const retentionHours = 24;
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function requestHash(req: ordersV1.CreateOrderRequest): string {
  return createHash("sha256")
    .update(JSON.stringify([req.customerId, req.items.map((i) => [i.sku, i.quantity])]))
    .digest("hex");
}

function priceOrder(req: ordersV1.CreateOrderRequest, products: commonV1.Product[]): ordersV1.Order {
  const bySku = new Map(products.map((p) => [p.sku, p]));
  const currencyCode = products[0]?.unitPrice?.currencyCode ?? "";
  let total = 0n;
  const items = req.items.map((item) => {
    const unitPrice = bySku.get(item.sku)?.unitPrice;
    if (!unitPrice) throw new ConnectError(`no price for sku ${item.sku}`, Code.Internal);
    const lineTotal = unitPrice.amountMinor * BigInt(item.quantity);
    total += lineTotal;
    return { sku: item.sku, name: bySku.get(item.sku)!.name, quantity: item.quantity, unitPrice, lineTotal: { currencyCode, amountMinor: lineTotal } };
  });
  return create(ordersV1.OrderSchema, {
    id: randomUUID(),
    status: ordersV1.OrderStatus.PLACED,
    customerId: req.customerId,
    items,
    total: { currencyCode, amountMinor: total },
  });
}

async function findByKey(pool: pg.Pool, key: string): Promise<{ hash: string; order: ordersV1.Order } | undefined> {
  const r = await transaction(
    pool,
    (c) =>
      c.query<{ request_hash: string; response: Buffer }>(
        "SELECT request_hash, response FROM orders.idempotency_records WHERE key = $1 AND expires_at >= now()",
        [key],
      ),
    { readOnly: true },
  );
  const row = r.rows[0];
  return row && { hash: row.request_hash, order: fromBinary(ordersV1.OrderSchema, row.response) };
}

/** The order as stored, or undefined when a live record holds the key (nothing kept). */
async function insert(pool: pg.Pool, order: ordersV1.Order, key: string, hash: string): Promise<ordersV1.Order | undefined> {
  const createdAt = new Date();
  const stored = create(ordersV1.OrderSchema, {
    ...order,
    createdAt: createdAt.toISOString(),
    receipt: create(ordersV1.ReceiptSchema, { state: ordersV1.ReceiptState.PENDING, attempts: 0 }),
  });
  return transaction(pool, async (c) => {
    const r = await c.query<{ stored: boolean }>(insertOrderStatement, insertOrderParams(order, stored, createdAt, key, hash, retentionHours));
    if (r.rows[0]!.stored) return stored;
    throw new KeyTaken();
  }).catch((e: unknown) => {
    if (e instanceof KeyTaken) return undefined;
    throw e;
  });
}

class KeyTaken extends Error {}

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
  receipt_state: "pending" | "sent" | "failed" | null;
  receipt_attempts: number | null;
}

const receiptStates = {
  pending: ordersV1.ReceiptState.PENDING,
  sent: ordersV1.ReceiptState.SENT,
  failed: ordersV1.ReceiptState.FAILED,
} as const;

async function getOrder(pool: pg.Pool, id: string): Promise<ordersV1.Order | undefined> {
  return transaction(
    pool,
    async (c) => {
      const r = await c.query<OrderLineRow>(getOrderStatement, [id]);
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

runPlainService("plain-orders", async () => {
  const pool = plainPool(requiredEnv("DATABASE_URL"), "plain-orders");
  const pricing = grpcClient(pricingV1.PricingService, requiredEnv("PRICING_URL"));
  const routes = (router: ConnectRouter) =>
    router.service(ordersV1.OrdersService, {
      async createOrder(req) {
        if (req.customerId === "" || req.items.length === 0) throw new ConnectError("customer_id and items are required", Code.InvalidArgument);
        const hash = requestHash(req);
        const key = req.idempotencyKey;
        const replay = (record: { hash: string; order: ordersV1.Order }) => {
          if (record.hash !== hash) throw new ConnectError(`idempotency key ${JSON.stringify(key)} was used for a different request`, Code.AlreadyExists);
          return create(ordersV1.CreateOrderResponseSchema, { order: record.order, replayed: true });
        };
        let order: ordersV1.Order;
        try {
          const prices = await pricing.getPrices({ skus: req.items.map((i) => i.sku) });
          order = priceOrder(req, prices.products);
        } catch (e) {
          const existing = key === "" ? undefined : await findByKey(pool, key).catch(() => undefined);
          if (existing) return replay(existing);
          throw e;
        }
        const stored = await insert(pool, order, key, hash);
        if (stored) return create(ordersV1.CreateOrderResponseSchema, { order: stored, replayed: false });
        // A live record holds the key (also one a concurrent request committed first): answer with its order.
        const winner = await findByKey(pool, key);
        if (winner) return replay(winner);
        throw new ConnectError(`idempotency key ${JSON.stringify(key)} expired while in use; retry`, Code.Aborted);
      },
      async getOrder(req) {
        if (!uuidPattern.test(req.orderId)) throw new ConnectError("order_id must be a UUID", Code.InvalidArgument);
        const order = await getOrder(pool, req.orderId.toLowerCase());
        if (!order) throw new ConnectError(`order ${req.orderId} not found`, Code.NotFound);
        return create(ordersV1.GetOrderResponseSchema, { order });
      },
    });
  const server = await serveH2c(routes, portEnv("PORT"), requiredEnv("HOST"));
  return closer([server], () => pool.end());
});
