import { create } from "@bufbuild/protobuf";
import type { Client, HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { checkoutV1, type ordersV1, type pricingV1 } from "@platform/proto";
import { idempotencyKeyHeader } from "@platform/runtime";

export { idempotencyKeyHeader };

export interface CheckoutDeps {
  orders: Client<typeof ordersV1.OrdersService>;
  pricing: Client<typeof pricingV1.PricingService>;
}

/**
 * Orchestrates the public API over the internal services: the catalogue
 * comes from pricing, orders from orders. The idempotency key arrives as a
 * header and continues as a field of CreateOrder, where it is stored.
 */
export class CheckoutService implements ServiceImpl<typeof checkoutV1.CheckoutService> {
  constructor(private readonly deps: CheckoutDeps) {}

  async listProducts(): Promise<checkoutV1.ListProductsResponse> {
    const res = await this.deps.pricing.listProducts({});
    return create(checkoutV1.ListProductsResponseSchema, { products: res.products });
  }

  async placeOrder(req: checkoutV1.PlaceOrderRequest, ctx: HandlerContext): Promise<checkoutV1.PlaceOrderResponse> {
    const res = await this.deps.orders.createOrder({
      idempotencyKey: ctx.requestHeader.get(idempotencyKeyHeader) ?? "",
      customerId: req.customerId,
      items: req.items,
    });
    return create(checkoutV1.PlaceOrderResponseSchema, { order: res.order });
  }

  async getOrder(req: checkoutV1.GetOrderRequest): Promise<checkoutV1.GetOrderResponse> {
    const res = await this.deps.orders.getOrder({ orderId: req.orderId });
    return create(checkoutV1.GetOrderResponseSchema, { order: res.order });
  }
}
