/** An outside client: `buf curl` with the proto schema, gRPC over h2c, against the gateway. */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { bufCurl as bufCurlAt, sharedPlatform, type SharedPlatform } from "@platform/test-support";

// Read-only but for its own orders (customer "buf-curl"): the run's shared platform.
let p: SharedPlatform;
before(async () => {
  p = await sharedPlatform();
});
after(async () => {
  await p?.close();
});

const bufCurl = (method: string, body: object, extra: string[] = []) => bufCurlAt(p.gatewayUrl, method, body, extra);

test("buf curl lists products and places an order over gRPC", async () => {
  const list = JSON.parse((await bufCurl("ListProducts", {})).stdout) as { products: { sku: string; unitPrice: { amountMinor: string } }[] };
  assert.ok(list.products.some((x) => x.sku === "MUG-CERAMIC" && x.unitPrice.amountMinor === "1200"));
  const placed = JSON.parse(
    (await bufCurl("PlaceOrder", { customerId: "buf-curl", items: [{ sku: "MUG-CERAMIC", quantity: 3 }] }, ["-H", "Idempotency-Key: buf-curl-1"])).stdout,
  ) as {
    order: { id: string; total: { amountMinor: string } };
  };
  assert.equal(placed.order.total.amountMinor, "3600");
  const rows = await p.sql("SELECT id FROM orders.orders WHERE customer_id = 'buf-curl'");
  assert.deepEqual(rows, [{ id: placed.order.id }]);
});

test("buf curl sees a precise error code for bad input", async () => {
  await assert.rejects(bufCurl("PlaceOrder", { customerId: "buf-curl", items: [{ sku: "NOPE", quantity: 1 }] }), (e: { stderr: string }) => {
    assert.match(e.stderr, /invalid_argument/);
    assert.match(e.stderr, /unknown sku/);
    return true;
  });
});
