/**
 * Plain checkout: the public API over orders and pricing, the calls of
 * services/checkout/src/checkout-service.ts. Serves gRPC on h2c (PORT).
 */
import { create } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import { checkoutV1, ordersV1, pricingV1 } from "@platform/proto";
import { orderLineRequests, publicOrder, publicProduct } from "@platform/proto/public-twins";
import { closer, grpcClient, portEnv, requiredEnv, runPlainService, serveH2c } from "./plain-runtime.js";

runPlainService("plain-checkout", async () => {
  const orders = grpcClient(ordersV1.OrdersService, requiredEnv("ORDERS_URL"));
  const pricing = grpcClient(pricingV1.PricingService, requiredEnv("PRICING_URL"));
  const routes = (router: ConnectRouter) =>
    router.service(checkoutV1.CheckoutService, {
      async listProducts() {
        const res = await pricing.listProducts({});
        return create(checkoutV1.ListProductsResponseSchema, { products: res.products.map(publicProduct) });
      },
      async placeOrder(req, ctx) {
        const res = await orders.createOrder({
          idempotencyKey: ctx.requestHeader.get("idempotency-key") ?? "",
          customerId: req.customerId,
          items: orderLineRequests(req.items),
        });
        return create(checkoutV1.PlaceOrderResponseSchema, { order: res.order && publicOrder(res.order) });
      },
      async getOrder(req) {
        const res = await orders.getOrder({ orderId: req.orderId });
        return create(checkoutV1.GetOrderResponseSchema, { order: res.order && publicOrder(res.order) });
      },
    });
  const server = await serveH2c(routes, portEnv("PORT"), requiredEnv("HOST"));
  return closer([server]);
});
