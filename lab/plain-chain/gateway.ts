/**
 * Plain gateway: checkout.v1.CheckoutService passed through to checkout, as
 * services/gateway does, on two ports (node's h2c server cannot also speak
 * HTTP/1.1, and a plain team would not sniff connection prefaces):
 *
 *   PORT      HTTP/1.1: Connect (JSON and binary) and gRPC-Web
 *   H2C_PORT  HTTP/2 without TLS (prior knowledge): gRPC, Connect, gRPC-Web
 *
 * Like the platform's edge it gives every PlaceOrder an idempotency key
 * (the client's Idempotency-Key header, or a fresh one), so that orders
 * runs the same statements for the same request in both chains.
 */
import { randomUUID } from "node:crypto";
import type { ConnectRouter } from "@connectrpc/connect";
import { checkoutV1 } from "@platform/proto";
import { closer, grpcClient, portEnv, requiredEnv, runPlainService, serveH2c, serveHttp1 } from "./plain-runtime.js";

runPlainService("plain-gateway", async () => {
  const checkout = grpcClient(checkoutV1.CheckoutService, requiredEnv("CHECKOUT_URL"));
  const routes = (router: ConnectRouter) =>
    router.service(checkoutV1.CheckoutService, {
      listProducts: (req) => checkout.listProducts(req),
      placeOrder: (req, ctx) => checkout.placeOrder(req, { headers: { "idempotency-key": ctx.requestHeader.get("idempotency-key") || randomUUID() } }),
      getOrder: (req) => checkout.getOrder(req),
    });
  const host = requiredEnv("HOST");
  const http1 = await serveHttp1(routes, portEnv("PORT"), host);
  const h2c = await serveH2c(routes, portEnv("H2C_PORT"), host);
  return closer([http1, h2c]);
});
