/**
 * An outside gRPC client: @grpc/grpc-js (the gRPC project's own Node
 * implementation; nothing from connect-es) with a hand-written service
 * definition whose messages are encoded by @bufbuild/protobuf's toBinary /
 * fromBinary. It calls the gateway over h2c and sees codes and messages as a
 * grpc-js (or grpc-go) user would. grpc-js decodes grpc-message with
 * decodeURI, so a server that percent-encodes more than the gRPC spec asks
 * (encodeURIComponent: ";" as %3B, "," as %2C) shows those users mangled
 * messages: every message here is asserted exactly.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary, type DescMessage, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { checkoutV1 } from "@platform/proto";
import { logLines, eventually, setServiceFaults, startTestPlatform, type TestPlatform } from "@platform/test-support";

const aliceKey = randomUUID();
const bobKey = randomUUID();
let p: TestPlatform;
let client: grpc.Client;
before(async () => {
  p = await startTestPlatform({
    faultInjection: true,
    serviceEnv: {
      // Authentication and a rate limit on, so that unauthenticated and the
      // rate limit's resource_exhausted are reachable too. alice's calls here
      // are sequential and stay far below the limit.
      gateway: { AUTH_MODE: "api-key", AUTH_API_KEYS: `alice=${aliceKey},bob=${bobKey}`, RATE_LIMIT_PER_SEC: "20", RATE_LIMIT_BURST: "20" },
    },
  });
  client = new grpc.Client(new URL(p.gatewayUrl).host, grpc.credentials.createInsecure());
});
after(async () => {
  client?.close();
  await p?.close();
});

interface Outcome<O> {
  code: grpc.status;
  details: string;
  metadata?: grpc.Metadata;
  value?: O;
}

interface CallOptions {
  metadata?: Record<string, string>;
  /** grpc-js's deadline option (sent as grpc-timeout). */
  deadlineMs?: number;
  /** Who calls: alice's key unless given; null sends no credentials. */
  apiKey?: string | null;
}

function unary<I extends DescMessage, O extends DescMessage>(method: string, input: I, output: O) {
  return (req: MessageInitShape<I>, opts: CallOptions = {}): Promise<Outcome<MessageShape<O>>> => {
    const md = new grpc.Metadata();
    if (opts.apiKey !== null) md.set("authorization", `Bearer ${opts.apiKey ?? aliceKey}`);
    for (const [k, v] of Object.entries(opts.metadata ?? {})) md.set(k, v);
    return new Promise((resolve) => {
      let trailers: grpc.Metadata | undefined;
      const call = client.makeUnaryRequest(
        `/checkout.v1.CheckoutService/${method}`,
        (m: MessageShape<I>) => Buffer.from(toBinary(input, m)),
        (b: Buffer) => fromBinary(output, b),
        create(input, req),
        md,
        opts.deadlineMs === undefined ? {} : { deadline: Date.now() + opts.deadlineMs },
        (err: grpc.ServiceError | null, value?: MessageShape<O>) =>
          resolve(
            err ? { code: err.code, details: err.details, metadata: err.metadata } : { code: grpc.status.OK, details: "", metadata: trailers, value: value! },
          ),
      );
      call.on("status", (s: grpc.StatusObject) => (trailers = s.metadata));
    });
  };
}

const listProducts = unary("ListProducts", checkoutV1.ListProductsRequestSchema, checkoutV1.ListProductsResponseSchema);
const placeOrder = unary("PlaceOrder", checkoutV1.PlaceOrderRequestSchema, checkoutV1.PlaceOrderResponseSchema);
const getOrder = unary("GetOrder", checkoutV1.GetOrderRequestSchema, checkoutV1.GetOrderResponseSchema);

function assertStatus(o: Outcome<unknown>, code: grpc.status, details: string): void {
  assert.deepEqual({ code: grpc.status[o.code], details: o.details }, { code: grpc.status[code], details });
}

async function orderCount(customerId: string): Promise<number> {
  const rows = await p.sql<{ n: string }>("SELECT count(*) AS n FROM orders.orders WHERE customer_id = $1", [customerId]);
  return Number(rows[0]!.n);
}

describe("calls that succeed", () => {
  test("ListProducts", async () => {
    const o = await listProducts({});
    assertStatus(o, grpc.status.OK, "");
    const mug = o.value?.products.find((x) => x.sku === "MUG-CERAMIC");
    assert.equal(mug?.unitPrice?.currencyCode, "USD");
    assert.equal(mug?.unitPrice?.amountMinor, 1200n);
  });

  test("PlaceOrder with an idempotency key, and its replay: one order, the same answer", async () => {
    const customerId = `grpc-js-${randomUUID()}`;
    const key = `grpc-js-${randomUUID()}`;
    const req = {
      customerId,
      items: [
        { sku: "MUG-CERAMIC", quantity: 2 },
        { sku: "COFFEE-BEANS-1KG", quantity: 1 },
      ],
    };
    const first = await placeOrder(req, { metadata: { "idempotency-key": key } });
    assertStatus(first, grpc.status.OK, "");
    assert.equal(first.value?.order?.customerId, customerId);
    assert.equal(first.value?.order?.total?.amountMinor, 2400n + 2450n);
    const replay = await placeOrder(req, { metadata: { "idempotency-key": key } });
    assertStatus(replay, grpc.status.OK, "");
    assert.equal(replay.value?.order?.id, first.value?.order?.id);
    assert.equal(replay.value?.order?.createdAt, first.value?.order?.createdAt);
    assert.equal(await orderCount(customerId), 1);
    const read = await getOrder({ orderId: first.value!.order!.id });
    assertStatus(read, grpc.status.OK, "");
    assert.deepEqual(
      read.value?.order?.items.map((i) => [i.sku, i.quantity]),
      [
        ["MUG-CERAMIC", 2],
        ["COFFEE-BEANS-1KG", 1],
      ],
    );
  });
});

describe("every documented error, with its exact message", () => {
  const customerId = `grpc-js-bad-${randomUUID()}`;

  test("invalid_argument: bad input, each naming the field and the rule it broke (messages with quotes, brackets, braces, commas and backticks)", async () => {
    const cases: [MessageInitShape<typeof checkoutV1.PlaceOrderRequestSchema>, string][] = [
      [{ customerId, items: [{ sku: "NO-SUCH-SKU", quantity: 1 }] }, 'unknown sku "NO-SUCH-SKU"'],
      [{ customerId, items: [{ sku: "MUG-CERAMIC", quantity: 0 }] }, "items[0].quantity: must be greater than 0 and less than or equal to 1000"],
      [{ customerId, items: [] }, "items: must contain at least 1 item(s)"],
      [{ customerId: "", items: [{ sku: "MUG-CERAMIC", quantity: 1 }] }, "customer_id: must be at least 1 characters"],
      [{ customerId, items: [{ sku: 'café/crème; 50% "off", ☕', quantity: 1 }] }, "items[0].sku: does not match regex pattern `^[A-Z0-9][A-Z0-9-]{0,63}$`"],
      [
        {
          customerId,
          items: [
            { sku: "MUG-CERAMIC", quantity: 1 },
            { sku: "MUG-CERAMIC", quantity: 1 },
          ],
        },
        "items[1].sku MUG-CERAMIC appears twice; combine the quantities",
      ],
    ];
    for (const [req, details] of cases) assertStatus(await placeOrder(req), grpc.status.INVALID_ARGUMENT, details);
    assertStatus(await getOrder({ orderId: "not-a-uuid" }), grpc.status.INVALID_ARGUMENT, "order_id: must be a valid UUID");
    assert.equal(await orderCount(customerId), 0);
  });

  test("invalid_argument: a malformed idempotency key or deadline", async () => {
    const req = { customerId, items: [{ sku: "MUG-CERAMIC", quantity: 1 }] };
    assertStatus(
      await placeOrder(req, { metadata: { "idempotency-key": "has space" } }),
      grpc.status.INVALID_ARGUMENT,
      "Idempotency-Key must be printable ASCII without spaces",
    );
    assertStatus(
      await placeOrder(req, { metadata: { "idempotency-key": "k".repeat(256) } }),
      grpc.status.INVALID_ARGUMENT,
      "Idempotency-Key must be at most 255 characters, got 256",
    );
    assertStatus(
      await placeOrder(req, { metadata: { "grpc-timeout": "abc" } }),
      grpc.status.INVALID_ARGUMENT,
      "protocol error: invalid grpc timeout value: abc",
    );
    assert.equal(await orderCount(customerId), 0);
  });

  test("not_found", async () => {
    const orderId = randomUUID();
    assertStatus(await getOrder({ orderId }), grpc.status.NOT_FOUND, `order ${orderId} not found`);
  });

  test("already_exists: the same key with a different request", async () => {
    const key = `k;1,/"${randomUUID()}"`;
    const c = `grpc-js-reuse-${randomUUID()}`;
    assertStatus(
      await placeOrder({ customerId: c, items: [{ sku: "MUG-CERAMIC", quantity: 1 }] }, { metadata: { "idempotency-key": key } }),
      grpc.status.OK,
      "",
    );
    assertStatus(
      await placeOrder({ customerId: c, items: [{ sku: "MUG-CERAMIC", quantity: 3 }] }, { metadata: { "idempotency-key": key } }),
      grpc.status.ALREADY_EXISTS,
      `idempotency key ${JSON.stringify(key)} was already used for a different request; use a new key for a new order`,
    );
    assert.equal(await orderCount(c), 1);
  });

  test("resource_exhausted: a body over READ_MAX_BYTES", async () => {
    const items = Array.from({ length: 20_000 }, (_, i) => ({ sku: `SKU-${i}`, quantity: 1 }));
    const size = toBinary(checkoutV1.PlaceOrderRequestSchema, create(checkoutV1.PlaceOrderRequestSchema, { customerId, items })).byteLength;
    assertStatus(await placeOrder({ customerId, items }), grpc.status.RESOURCE_EXHAUSTED, `message size ${size} is larger than configured readMaxBytes 65536`);
  });

  test("resource_exhausted: over the client's rate limit, with a pushback hint", async () => {
    // Requests the gateway answers itself (a malformed key), so that the
    // burst puts no load on the services behind it.
    const req = { customerId, items: [{ sku: "MUG-CERAMIC", quantity: 1 }] };
    const outcomes = await Promise.all(Array.from({ length: 60 }, () => placeOrder(req, { apiKey: bobKey, metadata: { "idempotency-key": "has space" } })));
    const limited = outcomes.filter((o) => o.code === grpc.status.RESOURCE_EXHAUSTED);
    assert.ok(limited.length >= 20, `bob limited ${limited.length} times`);
    for (const o of limited) {
      assertStatus(o, grpc.status.RESOURCE_EXHAUSTED, "rate limit exceeded for this client; slow down");
      assert.ok(Number(o.metadata?.get("grpc-retry-pushback-ms")[0]) > 0, "grpc-retry-pushback-ms");
    }
    for (const o of outcomes.filter((x) => x.code !== grpc.status.RESOURCE_EXHAUSTED)) {
      assertStatus(o, grpc.status.INVALID_ARGUMENT, "Idempotency-Key must be printable ASCII without spaces");
    }
  });

  test("unauthenticated: no key, or a wrong one", async () => {
    assertStatus(await listProducts({}, { apiKey: null }), grpc.status.UNAUTHENTICATED, "authentication required: send Authorization: Bearer <api key>");
    assertStatus(await listProducts({}, { apiKey: "nope" }), grpc.status.UNAUTHENTICATED, "invalid API key");
  });

  test("unavailable: pricing's database is down", async () => {
    await setServiceFaults(p, "pricing", { db: { unreachable: true } });
    try {
      const o = await placeOrder({ customerId, items: [{ sku: "MUG-CERAMIC", quantity: 1 }] }, { metadata: { "idempotency-key": randomUUID() } });
      assertStatus(o, grpc.status.UNAVAILABLE, "checkout: orders: pricing: pricing-db: database unavailable: unreachable (injected fault)");
    } finally {
      await setServiceFaults(p, "pricing", {});
    }
  });
});

describe("deadlines", () => {
  test("grpc-js's deadline reaches the gateway as grpc-timeout, and a call that cannot make it fails with DEADLINE_EXCEEDED and writes nothing", async () => {
    const customerId = `grpc-js-dl-${randomUUID()}`;
    await setServiceFaults(p, "pricing", { db: { latencyMs: 10_000 } });
    try {
      const requestId = `grpc-js-dl-${randomUUID()}`;
      const o = await placeOrder({ customerId, items: [{ sku: "MUG-CERAMIC", quantity: 1 }] }, { deadlineMs: 1500, metadata: { "x-request-id": requestId } });
      // Which side notices first is a race (the client's own timer, or the
      // gateway's answer at the same instant), so only the code is asserted.
      assert.equal(grpc.status[o.code], "DEADLINE_EXCEEDED", o.details);
      await eventually(() => logLines(p, "gateway").some((l) => l["requestId"] === requestId && l["msg"] === "rpc"), "the gateway logged the request");
      const line = logLines(p, "gateway").find((l) => l["requestId"] === requestId && l["msg"] === "rpc")!;
      assert.equal(line["deadlineSource"], "client");
      assert.ok((line["deadlineMs"] as number) <= 1500, `deadline ${String(line["deadlineMs"])} ms`);
    } finally {
      await setServiceFaults(p, "pricing", {});
    }
    assert.equal(await orderCount(customerId), 0);
  });

  test("without a deadline the gateway's default applies, and its DEADLINE_EXCEEDED names the hop that did not answer", async () => {
    await setServiceFaults(p, "pricing", { db: { latencyMs: 10_000 } });
    try {
      const o = await listProducts({});
      assert.equal(grpc.status[o.code], "DEADLINE_EXCEEDED", o.details);
      // Which hop's timer fires first is a race on a busy machine: the
      // gateway's own ("checkout: no answer before the deadline"), or
      // checkout's or pricing's, a hop reserve earlier, relayed with each
      // hop's prefix ("checkout: pricing: no answer before the deadline").
      // Either way the ":" arrive as written (encodeURIComponent made them %3A,
      // which grpc-js's decodeURI leaves).
      assert.match(o.details, /^checkout: (no answer before the deadline|pricing: (no answer before the deadline|.*deadline.*))$/);
    } finally {
      await setServiceFaults(p, "pricing", {});
    }
  });
});
