/**
 * The public API end to end: four service processes on embedded PostgreSQL,
 * driven over Connect (JSON and binary), gRPC and gRPC-Web on the gateway's
 * one port, with the database checked for what was (and wasn't) written.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Code } from "@connectrpc/connect";
import pg from "pg";
import { protocols, setServiceFaults, startTestPlatform, type TestPlatform, expectCode } from "@platform/test-support";

let p: TestPlatform;
before(async () => {
  p = await startTestPlatform({ faultInjection: true });
});
after(async () => {
  await p?.close();
});

async function orderCount(customerId: string): Promise<number> {
  const rows = await p.sql<{ n: string }>("SELECT count(*) AS n FROM orders.orders WHERE customer_id = $1", [customerId]);
  return Number(rows[0]!.n);
}

describe("every protocol on the gateway's one port", () => {
  for (const protocol of protocols) {
    test(`${protocol}: list products, place an order, read it back`, async () => {
      const client = p.client(protocol);
      const { products } = await client.listProducts({});
      assert.ok(products.length >= 5, "the demo catalogue is seeded");
      const mug = products.find((x) => x.sku === "MUG-CERAMIC");
      assert.equal(mug?.unitPrice?.currencyCode, "USD");
      assert.equal(mug?.unitPrice?.amountMinor, 1200n);

      const customerId = `c-${protocol}-${randomUUID()}`;
      const { order } = await client.placeOrder({
        customerId,
        items: [
          { sku: "MUG-CERAMIC", quantity: 2 },
          { sku: "COFFEE-BEANS-1KG", quantity: 1 },
        ],
      });
      assert.ok(order);
      assert.equal(order.customerId, customerId);
      assert.equal(order.items.length, 2);
      assert.equal(order.items[0]!.lineTotal?.amountMinor, 2400n);
      assert.equal(order.total?.amountMinor, 2400n + 2450n);
      assert.equal(order.total?.currencyCode, "USD");

      const read = await client.getOrder({ orderId: order.id });
      assert.equal(read.order?.id, order.id);
      assert.equal(read.order?.total?.amountMinor, order.total?.amountMinor);
      assert.deepEqual(
        read.order?.items.map((i) => [i.sku, i.quantity]),
        [
          ["MUG-CERAMIC", 2],
          ["COFFEE-BEANS-1KG", 1],
        ],
      );
      assert.equal(await orderCount(customerId), 1);
    });
  }
});

describe("Idempotency-Key", () => {
  test("the same key with the same request returns the same order and stores one", async () => {
    const client = p.client("connect-json");
    const customerId = `c-idem-${randomUUID()}`;
    const key = randomUUID();
    const req = { customerId, items: [{ sku: "GRINDER-BURR", quantity: 1 }] };
    const first = await client.placeOrder(req, { headers: { "Idempotency-Key": key } });
    const second = await p.client("grpc").placeOrder(req, { headers: { "Idempotency-Key": key } });
    assert.equal(second.order?.id, first.order?.id);
    assert.equal(second.order?.createdAt, first.order?.createdAt);
    assert.equal(await orderCount(customerId), 1);
    const records = await p.sql("SELECT order_id FROM orders.idempotency_records WHERE key = $1", [key]);
    assert.deepEqual(records, [{ order_id: first.order?.id }]);
  });

  test("concurrent requests with one key produce exactly one order", async () => {
    const customerId = `c-race-${randomUUID()}`;
    const key = randomUUID();
    const req = { customerId, items: [{ sku: "KETTLE-GOOSENECK", quantity: 1 }] };
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => p.client(protocols[i % protocols.length]!).placeOrder(req, { headers: { "Idempotency-Key": key } })),
    );
    const ids = new Set(results.map((r) => r.order?.id));
    assert.equal(ids.size, 1, "every attempt answers with the same order");
    assert.equal(await orderCount(customerId), 1);
  });

  test("the same key with a different request is rejected and writes nothing", async () => {
    const client = p.client("connect-json");
    const customerId = `c-reuse-${randomUUID()}`;
    const key = randomUUID();
    await client.placeOrder({ customerId, items: [{ sku: "MUG-CERAMIC", quantity: 1 }] }, { headers: { "Idempotency-Key": key } });
    await expectCode(
      client.placeOrder({ customerId, items: [{ sku: "MUG-CERAMIC", quantity: 3 }] }, { headers: { "Idempotency-Key": key } }),
      Code.AlreadyExists,
      /already used for a different request/,
    );
    assert.equal(await orderCount(customerId), 1);
  });

  test("an expired key no longer protects anything: the same key places a new order", async () => {
    const client = p.client("connect-json");
    const customerId = `c-expired-${randomUUID()}`;
    const key = randomUUID();
    const req = { customerId, items: [{ sku: "MUG-CERAMIC", quantity: 1 }] };
    const first = await client.placeOrder(req, { headers: { "Idempotency-Key": key } });
    await p.sql("UPDATE orders.idempotency_records SET expires_at = now() - interval '1 second' WHERE key = $1", [key]);
    const second = await client.placeOrder(req, { headers: { "Idempotency-Key": key } });
    assert.notEqual(second.order?.id, first.order?.id);
    assert.equal(await orderCount(customerId), 2);
    const records = await p.sql("SELECT order_id FROM orders.idempotency_records WHERE key = $1", [key]);
    assert.deepEqual(records, [{ order_id: second.order?.id }], "the record now points at the new order");
  });

  test("a replay is answered from the store while pricing cannot answer, and a reused key is still rejected", async () => {
    const client = p.client("connect-json");
    const customerId = `c-replay-down-${randomUUID()}`;
    const key = randomUUID();
    const req = { customerId, items: [{ sku: "GRINDER-BURR", quantity: 1 }] };
    const first = await client.placeOrder(req, { headers: { "Idempotency-Key": key } });
    await setServiceFaults(p, "pricing", { db: { unreachable: true } });
    try {
      const replay = await client.placeOrder(req, { headers: { "Idempotency-Key": key } });
      assert.equal(replay.order?.id, first.order?.id);
      await expectCode(
        client.placeOrder({ customerId, items: [{ sku: "GRINDER-BURR", quantity: 2 }] }, { headers: { "Idempotency-Key": key } }),
        Code.AlreadyExists,
        /already used for a different request/,
      );
      await expectCode(client.placeOrder(req, { headers: { "Idempotency-Key": randomUUID() } }), Code.Unavailable, /pricing/);
    } finally {
      await setServiceFaults(p, "pricing", {});
    }
    assert.equal(await orderCount(customerId), 1);
  });

  test("malformed keys are refused at the edge", async () => {
    const client = p.client("connect-json");
    const customerId = `c-badkey-${randomUUID()}`;
    const req = { customerId, items: [{ sku: "MUG-CERAMIC", quantity: 1 }] };
    await expectCode(client.placeOrder(req, { headers: { "Idempotency-Key": "x".repeat(256) } }), Code.InvalidArgument, /at most 255/);
    await expectCode(client.placeOrder(req, { headers: { "Idempotency-Key": "has space" } }), Code.InvalidArgument, /printable ASCII/);
    assert.equal(await orderCount(customerId), 0);
  });
});

describe("bad input gets a precise status and writes nothing", () => {
  const customerId = `c-bad-${randomUUID()}`;
  const post = (path: string, body: string | Uint8Array, contentType = "application/json", headers: Record<string, string> = {}) =>
    fetch(`${p.gatewayUrl}/checkout.v1.CheckoutService/${path}`, { method: "POST", headers: { "content-type": contentType, ...headers }, body });

  test("semantic errors: unknown sku, bad quantities, missing fields", async () => {
    const client = p.client("connect-json");
    await expectCode(client.placeOrder({ customerId, items: [{ sku: "NO-SUCH-SKU", quantity: 1 }] }), Code.InvalidArgument, /unknown sku "NO-SUCH-SKU"/);
    await expectCode(
      client.placeOrder({ customerId, items: [{ sku: "MUG-CERAMIC", quantity: 0 }] }),
      Code.InvalidArgument,
      /^items\[0\]\.quantity: must be greater than 0/,
    );
    await expectCode(
      client.placeOrder({ customerId, items: [{ sku: "MUG-CERAMIC", quantity: -5 }] }),
      Code.InvalidArgument,
      /^items\[0\]\.quantity: must be greater than 0/,
    );
    await expectCode(
      client.placeOrder({ customerId, items: [{ sku: "MUG-CERAMIC", quantity: 2_000_000_000 }] }),
      Code.InvalidArgument,
      /less than or equal to 1000/,
    );
    await expectCode(client.placeOrder({ customerId, items: [] }), Code.InvalidArgument, /^items: must contain at least 1 item/);
    await expectCode(
      client.placeOrder({ customerId: "", items: [{ sku: "MUG-CERAMIC", quantity: 1 }] }),
      Code.InvalidArgument,
      /^customer_id: must be at least 1 characters/,
    );
    await expectCode(
      client.placeOrder({ customerId, items: [{ sku: "'; DROP TABLE orders.orders; --", quantity: 1 }] }),
      Code.InvalidArgument,
      /^items\[0\]\.sku: does not match regex pattern/,
    );
    await expectCode(client.getOrder({ orderId: "not-a-uuid" }), Code.InvalidArgument, /UUID/);
    await expectCode(client.getOrder({ orderId: randomUUID() }), Code.NotFound, /not found/);
    assert.equal(await orderCount(customerId), 0);
  });

  test("malformed JSON, wrong types and unknown fields", async () => {
    for (const body of ["{", "[]", '{"customerId": 5}', '{"customerId":"x","items":[{"sku":"MUG-CERAMIC","quantity":"lots"}]}', '{"nope": 1}']) {
      const res = await post("PlaceOrder", body);
      assert.equal(res.status, 400, `body ${body}`);
      const json = (await res.json()) as { code: string; message: string };
      assert.equal(json.code, "invalid_argument", `body ${body}`);
      assert.ok(json.message.length > 0);
    }
  });

  test("garbage protobuf and a wrong content type", async () => {
    const garbage = await post("PlaceOrder", new Uint8Array([0xff, 0xff, 0xff, 0x0f, 0x01]), "application/proto");
    assert.equal(garbage.status, 400);
    assert.equal(((await garbage.json()) as { code: string }).code, "invalid_argument");
    const wrongType = await post("PlaceOrder", "hello", "text/plain");
    assert.equal(wrongType.status, 415);
  });

  test("an oversized body is refused with resource_exhausted", async () => {
    const items = Array.from({ length: 20_000 }, (_, i) => ({ sku: `SKU-${i}`, quantity: 1 }));
    const res = await post("PlaceOrder", JSON.stringify({ customerId, items }));
    const json = (await res.json()) as { code: string; message: string };
    assert.equal(json.code, "resource_exhausted");
    assert.match(json.message, /readMaxBytes|larger than/);
  });

  test("unknown methods and paths", async () => {
    const res = await post("DeleteEverything", "{}");
    assert.equal(res.status, 404);
    const other = await fetch(`${p.gatewayUrl}/no/such/thing`, { method: "POST" });
    assert.equal(other.status, 404);
  });

  test("after all that, every service still serves and nothing was written", async () => {
    const { products } = await p.client("grpc").listProducts({});
    assert.ok(products.length >= 5);
    assert.equal(await orderCount(customerId), 0);
    for (const s of Object.values(p.services)) assert.ok(s.process.ready, `${s.name} still up`);
  });
});

describe("least privilege in the database", () => {
  async function asRole(role: string, sql: string): Promise<string> {
    const url = new URL(p.databaseUrl);
    url.username = role;
    const client = new pg.Client({ connectionString: url.toString() });
    await client.connect();
    try {
      await client.query(sql);
      return "ok";
    } catch (e) {
      return (e as { code?: string }).code ?? "error";
    } finally {
      await client.end();
    }
  }

  test("each service's role reaches its own schema and nothing else", async () => {
    assert.equal(await asRole("orders", "SELECT count(*) FROM orders.orders"), "ok");
    assert.equal(await asRole("pricing", "SELECT count(*) FROM pricing.products"), "ok");
    assert.equal(await asRole("orders", "SELECT count(*) FROM pricing.products"), "42501", "orders cannot read prices");
    assert.equal(await asRole("pricing", "SELECT count(*) FROM orders.orders"), "42501", "pricing cannot read orders");
    assert.equal(await asRole("orders", "CREATE TABLE public.sneaky (x int)"), "42501", "no objects outside its schema");
    assert.equal(await asRole("pricing", "CREATE SCHEMA sneaky"), "42501");
  });
});
