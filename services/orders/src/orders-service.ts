import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type Client, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { ordersV1, type commonV1, type pricingV1 } from "@platform/proto";
import { badRequestDetails, withRefusal } from "@platform/proto/error-details";
import { serviceCounter } from "@platform/runtime";
import type { OrderStore, IdempotencyRecord } from "./order-store.js";
import { priceOrder } from "./price-order.js";
import { requestHash } from "./request-hash.js";
import type { OrderChangeFeed } from "./order-change-feed.js";
import { finalReceipt, lastWatchPosition, watchPosition } from "./watch-position.js";

export interface OrdersDeps {
  store: OrderStore;
  /** The process's one LISTEN connection, shared by every WatchOrder. */
  changes: Pick<OrderChangeFeed, "subscribe">;
  pricing: Client<typeof pricingV1.PricingService>;
  idempotencyRetentionHours: number;
}

/**
 * Creates and reads orders. A create prices its lines through pricing
 * (outside any transaction: no connection is held while another service
 * works), then stores order, lines and idempotency record in one statement
 * of one transaction.
 *
 * A repeated key is found by that write (it stores nothing and returns the
 * earlier record), so a first attempt, the common case, costs one
 * transaction rather than a lookup plus a write. When pricing cannot answer
 * a request that carries a key, the key is looked up before giving up: a
 * retry of an order that was already placed is answered from the store even
 * while pricing is down, as it was when the lookup came first.
 */
export class OrdersService implements ServiceImpl<typeof ordersV1.OrdersService> {
  private readonly idempotency = serviceCounter(
    "orders_idempotency_total",
    "CreateOrder calls with an idempotency key, by outcome: created, replayed (answered from the store), rejected (key reused for another request).",
    ["outcome"],
  );

  constructor(private readonly deps: OrdersDeps) {}

  async createOrder(req: ordersV1.CreateOrderRequest): Promise<ordersV1.CreateOrderResponse> {
    rejectRepeatedSkus(req.items);
    const hash = requestHash(req);
    const key = req.idempotencyKey;
    let order: ReturnType<typeof priceOrder>;
    try {
      const prices = await this.deps.pricing.getPrices({ skus: req.items.map((i) => i.sku) });
      order = priceOrder(req.customerId, req.items, prices.products);
    } catch (e) {
      const existing = key === "" ? undefined : await this.deps.store.findByKey(key).catch(() => undefined);
      if (existing) return this.replay(existing, hash, key);
      throw e;
    }
    const outcome = await this.deps.store.insert(order, key, hash, this.deps.idempotencyRetentionHours);
    if (outcome.kind === "key_taken") return this.replay(outcome.record, hash, key);
    if (key !== "") this.idempotency.inc({ outcome: "created" });
    return create(ordersV1.CreateOrderResponseSchema, { order: outcome.order, replayed: false });
  }

  /** The stored answer for a repeated key, or a rejection when the key was used for something else. */
  private replay(record: IdempotencyRecord, hash: string, key: string): ordersV1.CreateOrderResponse {
    if (record.requestHash !== hash) {
      this.idempotency.inc({ outcome: "rejected" });
      throw withRefusal(
        new ConnectError(`idempotency key ${JSON.stringify(key)} was already used for a different request; use a new key for a new order`, Code.AlreadyExists),
        { reason: "IDEMPOTENCY_KEY_REUSED" },
      );
    }
    this.idempotency.inc({ outcome: "replayed" });
    return create(ordersV1.CreateOrderResponseSchema, { order: record.order, replayed: true });
  }

  async getOrder(req: ordersV1.GetOrderRequest): Promise<ordersV1.GetOrderResponse> {
    const order = await this.deps.store.get(req.orderId.toLowerCase());
    if (!order) throw new ConnectError(`order ${req.orderId} not found`, Code.NotFound);
    return create(ordersV1.GetOrderResponseSchema, { order });
  }

  /**
   * The order, then the order again at each change of its status or
   * receipt state, each with its position (watch-position.ts); over once
   * the receipt is final. Subscribed before the first read, so a change
   * committed after any read wakes the next one. Holds no pool connection
   * between reads: a watcher waits on the process's one LISTEN connection.
   */
  async *watchOrder(req: ordersV1.WatchOrderRequest, ctx: HandlerContext): AsyncGenerator<ordersV1.WatchOrderResponse> {
    if (req.resumeAfter > lastWatchPosition) {
      throw new ConnectError(`resume_after ${req.resumeAfter} is past an order's last position (${lastWatchPosition})`, Code.InvalidArgument);
    }
    const id = req.orderId.toLowerCase();
    const subscription = await this.deps.changes.subscribe(id);
    try {
      let last = req.resumeAfter;
      for (;;) {
        const order = await this.deps.store.get(id);
        if (!order) throw new ConnectError(`order ${req.orderId} not found`, Code.NotFound);
        const position = watchPosition(order);
        if (position > last) {
          yield create(ordersV1.WatchOrderResponseSchema, { order, position });
          last = position;
        }
        if (finalReceipt(order)) return;
        await subscription.changed(ctx.signal);
      }
    } finally {
      subscription.close();
    }
  }
}

/**
 * The one input rule the proto cannot declare per field: each SKU at most
 * once per order (the rest are buf.validate annotations in orders.proto,
 * checked before the handler runs).
 */
function rejectRepeatedSkus(items: readonly commonV1.OrderLineRequest[]): void {
  const seen = new Set<string>();
  items.forEach((item, i) => {
    if (seen.has(item.sku)) {
      const field = `items[${i}].sku`;
      const description = `${item.sku} appears twice; combine the quantities`;
      throw new ConnectError(`${field} ${description}`, Code.InvalidArgument, undefined, badRequestDetails([{ field, description }]));
    }
    seen.add(item.sku);
  });
}
