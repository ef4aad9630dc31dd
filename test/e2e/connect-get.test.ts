/**
 * Connect GET: the public API's read methods (idempotency_level =
 * NO_SIDE_EFFECTS: ListProducts, GetOrder) are served as HTTP GET requests
 * with the message in the query string, as plain fetch or curl sends them,
 * through the gateway's edge (CORS included). PlaceOrder is not. What
 * docs/connect-get.md says about caching is checked here too.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel as IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import { checkoutV1 } from "@platform/proto";
import { sharedAllowedOrigin, sharedPlatform, type SharedPlatform } from "@platform/test-support";

// Read-only but for its own orders: the run's shared platform, whose gateway allows this origin.
const allowedOrigin = sharedAllowedOrigin;
let p: SharedPlatform;
before(async () => {
  p = await sharedPlatform();
});
after(async () => {
  await p?.close();
});

const getUrl = (method: string, query: Record<string, string>) =>
  `${p.gatewayUrl}/checkout.v1.CheckoutService/${method}?${new URLSearchParams({ connect: "v1", ...query })}`;

test("ListProducts and GetOrder are the unary read methods (NO_SIDE_EFFECTS); PlaceOrder is not; WatchOrder reads but streams (no GET)", () => {
  assert.deepEqual(
    checkoutV1.CheckoutService.methods.map((m) => [m.name, IdempotencyLevel[m.idempotency], m.methodKind]),
    [
      ["ListProducts", "NO_SIDE_EFFECTS", "unary"],
      ["PlaceOrder", "IDEMPOTENT", "unary"],
      ["GetOrder", "NO_SIDE_EFFECTS", "unary"],
      ["WatchOrder", "NO_SIDE_EFFECTS", "server_streaming"],
    ],
  );
});

test("GET ListProducts with a JSON message in the query", async () => {
  const res = await fetch(getUrl("ListProducts", { encoding: "json", message: "{}" }), { headers: { "connect-timeout-ms": "2000" } });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "application/json");
  const body = (await res.json()) as { products: { sku: string }[] };
  assert.ok(body.products.some((x) => x.sku === "MUG-CERAMIC"));
  // docs/connect-get.md: the gateway marks nothing cacheable; whoever caches decides (change both together).
  assert.equal(res.headers.get("cache-control"), null);
  assert.ok(res.headers.get("x-request-id"));
});

test("GET GetOrder with a binary message, base64url in the query", async () => {
  const { order } = await p.client("connect-json").placeOrder({ customerId: "connect-get", items: [{ sku: "MUG-CERAMIC", quantity: 1 }] });
  const message = Buffer.from(toBinary(checkoutV1.GetOrderRequestSchema, create(checkoutV1.GetOrderRequestSchema, { orderId: order!.id }))).toString(
    "base64url",
  );
  const res = await fetch(getUrl("GetOrder", { encoding: "proto", base64: "1", message }));
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "application/proto");
  const got = fromBinary(checkoutV1.GetOrderResponseSchema, new Uint8Array(await res.arrayBuffer()));
  assert.equal(got.order?.id, order!.id);
  assert.equal(got.order?.total?.amountMinor, 1200n);
});

test("a GET answers errors like a POST does: code in the body, HTTP status from the code", async () => {
  const res = await fetch(getUrl("GetOrder", { encoding: "json", message: JSON.stringify({ orderId: "00000000-0000-0000-0000-000000000000" }) }));
  assert.equal(res.status, 404);
  assert.deepEqual(await res.json(), { code: "not_found", message: "order 00000000-0000-0000-0000-000000000000 not found" });
});

test("PlaceOrder cannot be sent as a GET: 405, and no order", async () => {
  // Other files place orders on the shared platform meanwhile: the count is of this request's customer.
  const count = () => p.sql("SELECT count(*)::int AS n FROM orders.orders WHERE customer_id = 'connect-get-place'");
  const before = await count();
  const res = await fetch(
    getUrl("PlaceOrder", { encoding: "json", message: JSON.stringify({ customerId: "connect-get-place", items: [{ sku: "MUG-CERAMIC", quantity: 1 }] }) }),
  );
  assert.equal(res.status, 405);
  await res.arrayBuffer();
  assert.deepEqual(await count(), before);
  assert.deepEqual(before, [{ n: 0 }]);
});

test("browsers: a GET from an allowed origin gets CORS headers (and Vary: Origin for caches); from any other origin it gets none", async () => {
  const allowed = await fetch(getUrl("ListProducts", { encoding: "json", message: "{}" }), { headers: { origin: allowedOrigin } });
  assert.equal(allowed.status, 200);
  assert.equal(allowed.headers.get("access-control-allow-origin"), allowedOrigin);
  assert.match(allowed.headers.get("vary") ?? "", /Origin/);
  await allowed.arrayBuffer();
  const preflight = await fetch(getUrl("ListProducts", { encoding: "json", message: "{}" }), {
    method: "OPTIONS",
    headers: { origin: allowedOrigin, "access-control-request-method": "GET", "access-control-request-headers": "connect-timeout-ms" },
  });
  assert.equal(preflight.status, 204);
  assert.match(preflight.headers.get("access-control-allow-methods") ?? "", /\bGET\b/);
  assert.match(preflight.headers.get("access-control-allow-headers") ?? "", /Connect-Timeout-Ms/i);
  const other = await fetch(getUrl("ListProducts", { encoding: "json", message: "{}" }), { headers: { origin: "https://evil.example.net" } });
  assert.equal(other.headers.get("access-control-allow-origin"), null);
  await other.arrayBuffer();
});
