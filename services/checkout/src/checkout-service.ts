import { create } from "@bufbuild/protobuf";
import type { Client, HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { checkoutV1, type ordersV1, type pricingV1 } from "@platform/proto";
import { orderLineRequests, publicOrder, publicProduct } from "@platform/proto/public-twins";
import { idempotencyKeyHeader } from "@platform/resilience";

export { idempotencyKeyHeader };

export interface CheckoutDeps {
  orders: Client<typeof ordersV1.OrdersService>;
  pricing: Client<typeof pricingV1.PricingService>;
}

/**
 * Orchestrates the public API over the internal services: the catalogue
 * comes from pricing, orders from orders. The idempotency key arrives as a
 * header and continues as a field of CreateOrder, where it is stored. The
 * internal APIs speak their own (wire-identical) types; the answers are
 * mapped to the public ones here, the only place the two meet.
 */
export class CheckoutService implements ServiceImpl<typeof checkoutV1.CheckoutService> {
  constructor(private readonly deps: CheckoutDeps) {}

  async listProducts(): Promise<checkoutV1.ListProductsResponse> {
    const res = await this.deps.pricing.listProducts({});
    return create(checkoutV1.ListProductsResponseSchema, { products: res.products.map(publicProduct) });
  }

  async placeOrder(req: checkoutV1.PlaceOrderRequest, ctx: HandlerContext): Promise<checkoutV1.PlaceOrderResponse> {
    const res = await this.deps.orders.createOrder({
      idempotencyKey: ctx.requestHeader.get(idempotencyKeyHeader) ?? "",
      customerId: req.customerId,
      items: orderLineRequests(req.items),
    });
    return create(checkoutV1.PlaceOrderResponseSchema, { order: res.order && publicOrder(res.order) });
  }

  async getOrder(req: checkoutV1.GetOrderRequest): Promise<checkoutV1.GetOrderResponse> {
    const res = await this.deps.orders.getOrder({ orderId: req.orderId });
    return create(checkoutV1.GetOrderResponseSchema, { order: res.order && publicOrder(res.order) });
  }

  /** orders' stream of the order, each message mapped to the public types as it comes. */
  async *watchOrder(req: checkoutV1.WatchOrderRequest): AsyncGenerator<checkoutV1.WatchOrderResponse> {
    for await (const res of this.deps.orders.watchOrder({ orderId: req.orderId, resumeAfter: req.resumeAfter })) {
      yield create(checkoutV1.WatchOrderResponseSchema, { order: res.order && publicOrder(res.order), position: res.position });
    }
  }
}
