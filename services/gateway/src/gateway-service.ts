import { randomUUID } from "node:crypto";
import type { Client, HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { checkoutV1 } from "@platform/proto";
import { idempotencyKeyHeader, readIdempotencyKey } from "./idempotency-key.js";

/**
 * The public face of checkout.v1.CheckoutService. The edge concerns live
 * here and in the runtime (deadline default and cap, request limits,
 * retries); the business lives in checkout.
 */
export class GatewayService implements ServiceImpl<typeof checkoutV1.CheckoutService> {
  constructor(private readonly checkout: Client<typeof checkoutV1.CheckoutService>) {}

  listProducts(req: checkoutV1.ListProductsRequest) {
    return this.checkout.listProducts(req);
  }

  placeOrder(req: checkoutV1.PlaceOrderRequest, ctx: HandlerContext) {
    // Without the client's key, one is minted per user operation: every
    // retry of this request then carries the same key, so a retried write
    // never creates a second order. (A client that repeats the whole request
    // itself must send its own key for the same guarantee.)
    const key = readIdempotencyKey(ctx.requestHeader) || randomUUID();
    return this.checkout.placeOrder(req, { headers: { [idempotencyKeyHeader]: key } });
  }

  getOrder(req: checkoutV1.GetOrderRequest) {
    return this.checkout.getOrder(req);
  }
}
