import { create } from "@bufbuild/protobuf";
import type { Client, HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { checkoutV1 } from "@platform/proto";
import { withHeartbeat } from "@platform/runtime";
import { edgeIdempotencyKey, idempotencyKeyHeader } from "./idempotency-key.js";

/**
 * The public face of checkout.v1.CheckoutService. The edge concerns live
 * here and in the runtime (deadline default and cap, request limits,
 * retries); the business lives in checkout.
 */
export class GatewayService implements ServiceImpl<typeof checkoutV1.CheckoutService> {
  constructor(
    private readonly checkout: Client<typeof checkoutV1.CheckoutService>,
    /** An idle WatchOrder gets an empty message this often (STREAM_HEARTBEAT_MS; 0: never). */
    private readonly heartbeatMs = 0,
  ) {}

  listProducts(req: checkoutV1.ListProductsRequest) {
    return this.checkout.listProducts(req);
  }

  placeOrder(req: checkoutV1.PlaceOrderRequest, ctx: HandlerContext) {
    // The same key on every retry: a retried write never creates a second order.
    return this.checkout.placeOrder(req, { headers: { [idempotencyKeyHeader]: edgeIdempotencyKey(ctx.requestHeader) } });
  }

  getOrder(req: checkoutV1.GetOrderRequest) {
    return this.checkout.getOrder(req);
  }

  /** checkout's stream, with an empty message (no order, position 0) whenever it is idle for heartbeatMs. */
  watchOrder(req: checkoutV1.WatchOrderRequest) {
    return withHeartbeat(this.checkout.watchOrder(req), this.heartbeatMs, () => create(checkoutV1.WatchOrderResponseSchema));
  }
}
