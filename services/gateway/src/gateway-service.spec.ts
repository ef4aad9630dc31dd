// npm test: own process (its calls through the wiring of main.ts met their deadlines after other specs in a shared process, and passed in one of their own; the cause is not found yet)
/**
 * The gateway's implementation of checkout.v1.CheckoutService, served in
 * memory over Connect's router (connect-es's createRouterTransport), with
 * checkout replaced by a small in-memory CheckoutService that records what
 * reached it. Then the same implementation wired as main.ts wires it (the
 * runtime's serve() and dependency client with the gateway's retry
 * policy), for what only that wiring does: the deadline and the
 * idempotency key on every attempt to checkout.
 */
import assert from "node:assert/strict";
import type { DescService } from "@bufbuild/protobuf";
import { after, before, beforeEach, describe, test } from "node:test";
import { Code, ConnectError, type Client, type HandlerContext } from "@connectrpc/connect";
import { checkoutV1, ordersV1 } from "@platform/proto";
import { apiRoutes, createDependencyClient, createLogger, forwardService, serve, type RunningServer, type ServiceRoute } from "@platform/runtime";
import { expectCode, CallLog, grpcClient, inMemoryClient, startDownstream, untilAborted, type Downstream, type Routes } from "@platform/test-support";
import { defaults, loadConfig } from "./config.js";
import { GatewayService } from "./gateway-service.js";
import { forwardedIdempotencyHeaders } from "./idempotency-key.js";

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const order = { id: "2f1e6c1a-0000-4000-8000-000000000001", customerId: "c-1", items: [{ sku: "MUG", name: "Mug", quantity: 2 }] };

/** An in-memory checkout: records every call; `behave` decides the answer (default: a fixed order). */
class FakeCheckout {
  readonly placeOrder = new CallLog<checkoutV1.PlaceOrderRequest>();
  readonly getOrder = new CallLog<checkoutV1.GetOrderRequest>();
  readonly listProducts = new CallLog<checkoutV1.ListProductsRequest>();
  /** Called on every PlaceOrder after it is recorded; throw to fail the call. */
  behave: (ctx: HandlerContext, attempt: number) => Promise<void> = async () => {};

  readonly routes: Routes = (router) =>
    router.service(checkoutV1.CheckoutService, {
      placeOrder: async (req, ctx) => {
        this.placeOrder.record(req, ctx);
        await this.behave(ctx, this.placeOrder.calls.length);
        return { order: { ...order, customerId: req.customerId } };
      },
      getOrder: async (req, ctx) => {
        this.getOrder.record(req, ctx);
        if (req.orderId !== order.id) throw new ConnectError(`order ${req.orderId} not found`, Code.NotFound);
        return { order };
      },
      listProducts: async (req, ctx) => {
        this.listProducts.record(req, ctx);
        return { products: [{ sku: "MUG", name: "Mug", unitPrice: { currencyCode: "EUR", amountMinor: 1250n } }] };
      },
    });
}

describe("GatewayService, served in memory", () => {
  let checkout: FakeCheckout;
  let gateway: Client<typeof checkoutV1.CheckoutService>;
  beforeEach(() => {
    checkout = new FakeCheckout();
    gateway = inMemoryClient(
      checkoutV1.CheckoutService,
      apiRoutes(defaults.apis, new GatewayService(inMemoryClient(checkoutV1.CheckoutService, checkout.routes))).routes,
    );
  });

  const place = (headers: Record<string, string> = {}) => gateway.placeOrder({ customerId: "c-1", items: [{ sku: "MUG", quantity: 2 }] }, { headers });

  test("PlaceOrder forwards the request and the client's Idempotency-Key unchanged, and answers checkout's order", async () => {
    const res = await place({ "Idempotency-Key": "client-key-1" });
    assert.equal(res.order?.id, order.id);
    assert.equal(checkout.placeOrder.calls.length, 1);
    const seen = checkout.placeOrder.calls[0]!;
    assert.equal(seen.headers.get("idempotency-key"), "client-key-1");
    assert.equal(seen.request.customerId, "c-1");
    assert.deepEqual(
      seen.request.items.map((i) => [i.sku, i.quantity]),
      [["MUG", 2]],
    );
  });

  test("PlaceOrder without a key mints one per user operation: a UUID, a different one for each request", async () => {
    await place();
    await place();
    const keys = checkout.placeOrder.calls.map((c) => c.headers.get("idempotency-key"));
    assert.equal(keys.length, 2);
    for (const k of keys) assert.match(k ?? "", uuid);
    assert.notEqual(keys[0], keys[1]);
  });

  test("a key of exactly 255 printable ASCII characters is accepted", async () => {
    const key = `${"k".repeat(254)}~`;
    await place({ "Idempotency-Key": key });
    assert.equal(checkout.placeOrder.calls[0]?.headers.get("idempotency-key"), key);
  });

  // Every rule of the key (idempotency-key.ts), each refused before any work: checkout is never called.
  const badKeys: [string, string, RegExp][] = [
    ["an empty key", "", /^Idempotency-Key is empty; omit it or send a value$/],
    ["a key of 256 characters", "k".repeat(256), /^Idempotency-Key must be at most 255 characters, got 256$/],
    ["a key with a space", "my key", /^Idempotency-Key must be printable ASCII without spaces$/],
    ["a key with a tab", "my\tkey", /^Idempotency-Key must be printable ASCII without spaces$/],
    ["a key beyond ASCII", "cl\u00e9", /^Idempotency-Key must be printable ASCII without spaces$/],
  ];
  for (const [what, key, message] of badKeys) {
    test(`PlaceOrder with ${what} is refused with INVALID_ARGUMENT before checkout is called`, async () => {
      await expectCode(place({ "Idempotency-Key": key }), Code.InvalidArgument, message);
      assert.equal(checkout.placeOrder.calls.length, 0);
    });
  }

  test("ListProducts and GetOrder are forwarded as they are", async () => {
    const { products } = await gateway.listProducts({});
    assert.deepEqual(
      products.map((p) => [p.sku, p.unitPrice?.amountMinor]),
      [["MUG", 1250n]],
    );
    const res = await gateway.getOrder({ orderId: order.id });
    assert.equal(res.order?.id, order.id);
    assert.deepEqual(
      checkout.getOrder.calls.map((c) => c.request.orderId),
      [order.id],
    );
    assert.equal(checkout.listProducts.calls.length, 1);
  });

  // What checkout answers reaches the client with the same code and message: the gateway adds nothing and hides nothing.
  const downstreamErrors: [Code, string][] = [
    [Code.InvalidArgument, "items[0].quantity must be positive, got 0"],
    [Code.AlreadyExists, 'idempotency key "k" was already used for a different request; use a new key for a new order'],
    [Code.FailedPrecondition, "items are priced in different currencies; place one order per currency"],
    [Code.Unavailable, "pricing-db: database unavailable"],
    [Code.DeadlineExceeded, "pricing: no answer before the deadline"],
    [Code.ResourceExhausted, "overloaded: try again later"],
  ];
  for (const [code, message] of downstreamErrors) {
    test(`checkout's ${Code[code]} reaches the client with its code and message`, async () => {
      checkout.behave = async () => {
        throw new ConnectError(message, code);
      };
      const err = await expectCode(place({ "Idempotency-Key": "k" }), code);
      assert.equal(err.rawMessage, message);
    });
  }

  test("GetOrder of an unknown order: checkout's NOT_FOUND with its message", async () => {
    const missing = "2f1e6c1a-0000-4000-8000-0000000000ff";
    await expectCode(gateway.getOrder({ orderId: missing }), Code.NotFound, new RegExp(`^order ${missing} not found$`));
  });
});

/**
 * An internal API the gateway publishes unchanged (forwarded-apis.ts),
 * here orders.v1 (CreateOrder is IDEMPOTENT, GetOrder NO_SIDE_EFFECTS in
 * its proto), forwarded with the gateway's key rule as main.ts forwards
 * it, to an in-memory OrdersService.
 */
describe("a forwarded API, served in memory", () => {
  const createOrder = new CallLog<ordersV1.CreateOrderRequest>();
  const getOrder = new CallLog<ordersV1.GetOrderRequest>();
  // Typed as forwarded-apis.ts types it: any service.
  const api: DescService = ordersV1.OrdersService;
  const internal = inMemoryClient(api, (router) =>
    router.service(ordersV1.OrdersService, {
      createOrder: (req, ctx) => {
        createOrder.record(req, ctx);
        return { order, replayed: false };
      },
      getOrder: (req, ctx) => {
        getOrder.record(req, ctx);
        return { order };
      },
    }),
  );
  const forwarded: ServiceRoute[] = [
    {
      service: api,
      impl: forwardService(api, internal, (method, ctx) => ({ headers: forwardedIdempotencyHeaders(method, ctx.requestHeader) })),
    },
  ];
  const served = apiRoutes(defaults.apis, new GatewayService(inMemoryClient(checkoutV1.CheckoutService, new FakeCheckout().routes)), forwarded);
  const edge = inMemoryClient(ordersV1.OrdersService, served.routes);
  // A request orders.proto's rules accept, so that the gateway's own checks are what is tested.
  const validOrder = { customerId: "c-1", items: [{ sku: "MUG", quantity: 1 }] };
  beforeEach(() => {
    createOrder.clear();
    getOrder.clear();
  });

  test("the gateway serves checkout's API and then each forwarded one", () => {
    assert.deepEqual(
      served.services.map((s) => s.typeName),
      ["checkout.v1.CheckoutService", "orders.v1.OrdersService"],
    );
  });

  test("an IDEMPOTENT method always carries a key downstream: the client's, else one minted", async () => {
    await edge.createOrder(validOrder, { headers: { "Idempotency-Key": "fwd-1" } });
    await edge.createOrder(validOrder);
    const keys = createOrder.calls.map((c) => c.headers.get("idempotency-key"));
    assert.equal(keys[0], "fwd-1");
    assert.match(keys[1] ?? "", uuid);
  });

  test("a method without side effects carries the client's key if it sent one, and none otherwise", async () => {
    await edge.getOrder({ orderId: order.id }, { headers: { "Idempotency-Key": "fwd-2" } });
    await edge.getOrder({ orderId: order.id });
    assert.deepEqual(
      getOrder.calls.map((c) => c.headers.get("idempotency-key")),
      ["fwd-2", null],
    );
  });

  test("a bad key is refused on a forwarded method too, before the call", async () => {
    await expectCode(
      edge.getOrder({ orderId: order.id }, { headers: { "Idempotency-Key": "k".repeat(256) } }),
      Code.InvalidArgument,
      /^Idempotency-Key must be at most 255 characters, got 256$/,
    );
    await expectCode(edge.createOrder(validOrder, { headers: { "Idempotency-Key": "" } }), Code.InvalidArgument, /^Idempotency-Key is empty/);
    assert.equal(getOrder.calls.length + createOrder.calls.length, 0);
  });
});

/**
 * The gateway as main.ts builds it: serve() with the gateway's
 * configuration, checkout reached through createDependencyClient with the
 * gateway's retry policy and budget. Checkout is the same small fake, on a
 * real h2c server, because the dependency client dials a URL.
 */
describe("GatewayService wired as main.ts wires it", () => {
  const checkout = new FakeCheckout();
  let downstream: Downstream;
  let server: RunningServer;
  let gateway: Client<typeof checkoutV1.CheckoutService>;
  before(async () => {
    downstream = await startDownstream(checkout.routes);
    const config = loadConfig({ PORT: "0", ADMIN_PORT: "0", CHECKOUT_URL: downstream.baseUrl });
    const client = createDependencyClient(checkoutV1.CheckoutService, { server: config.server, retry: config.retry, dependency: config.checkout });
    server = await serve({
      config: config.server,
      logger: createLogger("gateway", "silent"),
      ...apiRoutes(defaults.apis, new GatewayService(client)),
    });
    await server.ready;
    gateway = grpcClient(checkoutV1.CheckoutService, server.port);
  });
  after(async () => {
    await server?.shutdown("spec over");
    await downstream?.close();
  });
  beforeEach(() => {
    checkout.placeOrder.clear();
    checkout.behave = async () => {};
  });

  const place = (timeoutMs: number, headers: Record<string, string> = {}) =>
    gateway.placeOrder({ customerId: "c-1", items: [{ sku: "MUG", quantity: 1 }] }, { timeoutMs, headers });

  test("checkout receives the client's deadline, less than what the client gave", async () => {
    await place(2000);
    const seen = checkout.placeOrder.calls[0]!;
    assert.ok(seen.timeoutMs !== undefined, "checkout received a deadline");
    assert.ok(seen.timeoutMs > 0 && seen.timeoutMs < 2000, `checkout received ${seen.timeoutMs} ms of the client's 2000`);
  });

  test("a checkout that does not answer: DEADLINE_EXCEEDED for the client, and checkout sees its call time out", async () => {
    checkout.behave = (ctx) => untilAborted(ctx);
    await expectCode(place(300, { "Idempotency-Key": "slow-1" }), Code.DeadlineExceeded);
    // DEADLINE_EXCEEDED is never retried: one call, and it ended on checkout's side too.
    assert.equal(checkout.placeOrder.calls.length, 1);
    const seen = checkout.placeOrder.calls[0]!;
    assert.ok(seen.timeoutMs !== undefined && seen.timeoutMs < 300, `checkout's deadline ${seen.timeoutMs} ms is inside the client's 300`);
    assert.equal(await seen.whenAborted(), true, "checkout's call was ended at its deadline");
  });

  test("an UNAVAILABLE attempt is retried with the same idempotency key, the client's or the minted one", async () => {
    for (const headers of [{ "Idempotency-Key": "retry-1" }, {}] as Record<string, string>[]) {
      checkout.placeOrder.clear();
      checkout.behave = async (_ctx, attempt) => {
        if (attempt === 1) throw new ConnectError("checkout restarting", Code.Unavailable);
      };
      const res = await place(3000, headers);
      assert.equal(res.order?.id, order.id);
      const keys = checkout.placeOrder.calls.map((c) => c.headers.get("idempotency-key"));
      assert.equal(keys.length, 2, "one retry");
      assert.equal(keys[0], keys[1], "both attempts carry one key");
      if ("Idempotency-Key" in headers) assert.equal(keys[0], "retry-1");
      else assert.match(keys[0] ?? "", uuid);
    }
  });

  test("a caller's error is never retried: one attempt, checkout's code and message", async () => {
    checkout.behave = async () => {
      throw new ConnectError('idempotency key "k" was already used for a different request; use a new key for a new order', Code.AlreadyExists);
    };
    const err = await expectCode(place(3000, { "Idempotency-Key": "k" }), Code.AlreadyExists);
    assert.match(err.rawMessage, /already used for a different request/);
    assert.equal(checkout.placeOrder.calls.length, 1);
  });

  test("a bad key is refused at the edge before any attempt", async () => {
    await expectCode(place(3000, { "Idempotency-Key": "two words" }), Code.InvalidArgument, /printable ASCII without spaces/);
    assert.equal(checkout.placeOrder.calls.length, 0);
  });
});
