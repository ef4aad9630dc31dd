import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { checkoutV1, healthV1 } from "@platform/proto";
import { forwardService } from "./forward-service.js";

/** The inner service: records what reached it. In memory, through Connect's real router and serialization. */
function innerCheckout() {
  const seen: { method: string; key: string | null; auth: string | null }[] = [];
  const transport = createRouterTransport((router) =>
    router.service(checkoutV1.CheckoutService, {
      listProducts(_req, ctx) {
        seen.push({ method: "ListProducts", key: ctx.requestHeader.get("idempotency-key"), auth: ctx.requestHeader.get("authorization") });
        return create(checkoutV1.ListProductsResponseSchema, { products: [{ sku: "a", name: "A" }] });
      },
      placeOrder(_req, ctx) {
        seen.push({ method: "PlaceOrder", key: ctx.requestHeader.get("idempotency-key"), auth: ctx.requestHeader.get("authorization") });
        throw new ConnectError("out of stock", Code.FailedPrecondition);
      },
      getOrder() {
        throw new ConnectError("no order", Code.NotFound);
      },
    }),
  );
  return { seen, client: createClient(checkoutV1.CheckoutService, transport) };
}

function edgeOf(impl: ReturnType<typeof forwardService<typeof checkoutV1.CheckoutService>>) {
  const transport = createRouterTransport((router) => router.service(checkoutV1.CheckoutService, impl));
  return createClient(checkoutV1.CheckoutService, transport);
}

test("every method reaches the inner service with the same request and answers with its response", async () => {
  const inner = innerCheckout();
  const edge = edgeOf(forwardService(checkoutV1.CheckoutService, inner.client));
  const res = await edge.listProducts({});
  assert.deepEqual(
    res.products.map((p) => p.sku),
    ["a"],
  );
  assert.deepEqual(
    inner.seen.map((s) => s.method),
    ["ListProducts"],
  );
});

test("the inner service's error reaches the caller with its code and message", async () => {
  const edge = edgeOf(forwardService(checkoutV1.CheckoutService, innerCheckout().client));
  await assert.rejects(edge.getOrder({ orderId: "x" }), (e: unknown) => {
    const err = ConnectError.from(e);
    return err.code === Code.NotFound && err.rawMessage === "no order";
  });
});

test("inbound headers stay at the edge unless callOptions forwards them", async () => {
  const inner = innerCheckout();
  const edge = edgeOf(
    forwardService(checkoutV1.CheckoutService, inner.client, (method, ctx) => ({
      headers: method.name === "PlaceOrder" ? { "idempotency-key": ctx.requestHeader.get("idempotency-key") ?? "minted" } : {},
    })),
  );
  const headers = { authorization: "Bearer secret", "idempotency-key": "k-1" };
  await edge.listProducts({}, { headers });
  await assert.rejects(edge.placeOrder({ customerId: "c" }, { headers }), (e: unknown) => ConnectError.from(e).code === Code.FailedPrecondition);
  assert.deepEqual(inner.seen, [
    { method: "ListProducts", key: null, auth: null },
    { method: "PlaceOrder", key: "k-1", auth: null },
  ]);
});

test("a service with a streaming method is refused, naming the method", () => {
  const client = createClient(
    healthV1.Health,
    createRouterTransport(() => {}),
  );
  assert.throws(() => forwardService(healthV1.Health, client), /only unary methods can be forwarded; write handlers for Watch/);
});
