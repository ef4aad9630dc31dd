/**
 * checkout's implementation, served in memory over Connect's router, with
 * orders and pricing replaced by small in-memory servers of their APIs
 * that record what reached them. Then the implementation wired as main.ts
 * wires it (serve() and dependency clients with `retry: "none"`), for the
 * deadline on the call to orders and the single attempt below the edge.
 */
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { Code, ConnectError, type Client, type HandlerContext } from "@connectrpc/connect";
import { checkoutV1, ordersV1, pricingV1 } from "@platform/proto";
import { apiRoutes, createDependencyClient, createLogger, serve, type RunningServer } from "@platform/runtime";
import { expectCode, CallLog, grpcClient, inMemoryClient, startDownstream, untilAborted, type Downstream, type Routes } from "@platform/test-support";
import { CheckoutService } from "./checkout-service.js";
import { defaults, loadConfig } from "./config.js";

/** The service's routes, as main.ts derives them from its manifest. */
const routes = (impl: CheckoutService) => apiRoutes(defaults.apis, impl).routes;

const orderId = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
const storedOrder = {
  id: orderId,
  customerId: "c-9",
  items: [
    { sku: "MUG", name: "Mug", quantity: 3, unitPrice: { currencyCode: "EUR", amountMinor: 1250n }, lineTotal: { currencyCode: "EUR", amountMinor: 3750n } },
  ],
  total: { currencyCode: "EUR", amountMinor: 3750n },
};

/** In-memory orders and pricing: record every call; `createOrderFails` makes CreateOrder answer an error or hang. */
class FakeDownstreams {
  readonly createOrder = new CallLog<ordersV1.CreateOrderRequest>();
  readonly getOrder = new CallLog<ordersV1.GetOrderRequest>();
  readonly pricingCalls = new CallLog<unknown>();
  behave: (ctx: HandlerContext) => Promise<void> = async () => {};

  readonly orders: Routes = (router) =>
    router.service(ordersV1.OrdersService, {
      createOrder: async (req, ctx) => {
        this.createOrder.record(req, ctx);
        await this.behave(ctx);
        return { order: { ...storedOrder, customerId: req.customerId }, replayed: false };
      },
      getOrder: async (req, ctx) => {
        this.getOrder.record(req, ctx);
        if (req.orderId !== orderId) throw new ConnectError(`order ${req.orderId} not found`, Code.NotFound);
        return { order: storedOrder };
      },
    });

  readonly pricing: Routes = (router) =>
    router.service(pricingV1.PricingService, {
      listProducts: async (req, ctx) => {
        this.pricingCalls.record(req, ctx);
        return {
          products: [
            { sku: "MUG", name: "Mug", unitPrice: { currencyCode: "EUR", amountMinor: 1250n } },
            { sku: "TEE", name: "Tee", unitPrice: { currencyCode: "EUR", amountMinor: 9007199254740993n } },
          ],
        };
      },
      getPrices: async (req, ctx) => {
        this.pricingCalls.record(req, ctx);
        throw new ConnectError("checkout must not price orders itself", Code.Unimplemented);
      },
    });
}

describe("CheckoutService, served in memory", () => {
  let fakes: FakeDownstreams;
  let checkout: Client<typeof checkoutV1.CheckoutService>;
  beforeEach(() => {
    fakes = new FakeDownstreams();
    const impl = new CheckoutService({
      orders: inMemoryClient(ordersV1.OrdersService, fakes.orders),
      pricing: inMemoryClient(pricingV1.PricingService, fakes.pricing),
    });
    checkout = inMemoryClient(checkoutV1.CheckoutService, routes(impl));
  });

  test("PlaceOrder becomes one CreateOrder carrying the Idempotency-Key header as its field, the customer and the items", async () => {
    const res = await checkout.placeOrder(
      {
        customerId: "c-9",
        items: [
          { sku: "MUG", quantity: 3 },
          { sku: "TEE", quantity: 1 },
        ],
      },
      { headers: { "Idempotency-Key": "key-77" } },
    );
    assert.equal(res.order?.id, orderId);
    assert.equal(res.order?.total?.amountMinor, 3750n);
    assert.equal(fakes.createOrder.calls.length, 1);
    const { request } = fakes.createOrder.calls[0]!;
    assert.equal(request.idempotencyKey, "key-77");
    assert.equal(request.customerId, "c-9");
    assert.deepEqual(
      request.items.map((i) => [i.sku, i.quantity]),
      [
        ["MUG", 3],
        ["TEE", 1],
      ],
    );
    assert.equal(fakes.pricingCalls.calls.length, 0, "orders prices the order, not checkout");
  });

  test("PlaceOrder without the header sends an empty key (orders then stores no idempotency record)", async () => {
    await checkout.placeOrder({ customerId: "c-9", items: [{ sku: "MUG", quantity: 1 }] });
    assert.equal(fakes.createOrder.calls[0]?.request.idempotencyKey, "");
  });

  test("ListProducts is pricing's catalogue, prices exact beyond 2^53", async () => {
    const { products } = await checkout.listProducts({});
    assert.deepEqual(
      products.map((p) => [p.sku, p.name, p.unitPrice?.currencyCode, p.unitPrice?.amountMinor]),
      [
        ["MUG", "Mug", "EUR", 1250n],
        ["TEE", "Tee", "EUR", 9007199254740993n],
      ],
    );
  });

  test("GetOrder asks orders for that id and answers its order; an unknown id is orders' NOT_FOUND", async () => {
    const res = await checkout.getOrder({ orderId });
    assert.equal(res.order?.customerId, "c-9");
    const missing = "7c9e6679-7425-40de-944b-e07fc1f90000";
    await expectCode(checkout.getOrder({ orderId: missing }), Code.NotFound, new RegExp(`^order ${missing} not found$`));
    assert.deepEqual(
      fakes.getOrder.calls.map((c) => c.request.orderId),
      [orderId, missing],
    );
  });

  const ordersErrors: [Code, string][] = [
    [Code.InvalidArgument, "customer_id is required"],
    [Code.AlreadyExists, 'idempotency key "k" was already used for a different request; use a new key for a new order'],
    [Code.FailedPrecondition, "items are priced in different currencies; place one order per currency"],
    [Code.Internal, "pricing returned no price for sku MUG"],
    [Code.Unavailable, "pricing: unavailable"],
    [Code.DeadlineExceeded, "pricing: no answer before the deadline"],
  ];
  for (const [code, message] of ordersErrors) {
    test(`orders' ${Code[code]} reaches the caller with its code and message`, async () => {
      fakes.behave = async () => {
        throw new ConnectError(message, code);
      };
      const err = await expectCode(checkout.placeOrder({ customerId: "c-9", items: [{ sku: "MUG", quantity: 1 }] }), code);
      assert.equal(err.rawMessage, message);
    });
  }
});

describe("CheckoutService wired as main.ts wires it", () => {
  const fakes = new FakeDownstreams();
  const downstreams: Downstream[] = [];
  let server: RunningServer;
  let checkout: Client<typeof checkoutV1.CheckoutService>;
  before(async () => {
    const [orders, pricing] = [await startDownstream(fakes.orders), await startDownstream(fakes.pricing)];
    downstreams.push(orders, pricing);
    const config = loadConfig({ PORT: "0", ADMIN_PORT: "0", ORDERS_URL: orders.baseUrl, PRICING_URL: pricing.baseUrl });
    const impl = new CheckoutService({
      orders: createDependencyClient(ordersV1.OrdersService, { dependency: config.orders, server: config.server, retry: "none" }),
      pricing: createDependencyClient(pricingV1.PricingService, { dependency: config.pricing, server: config.server, retry: "none" }),
    });
    server = await serve({ config: config.server, logger: createLogger("checkout", "silent"), services: [checkoutV1.CheckoutService], routes: routes(impl) });
    await server.ready;
    checkout = grpcClient(checkoutV1.CheckoutService, server.port);
  });
  after(async () => {
    await server?.shutdown("spec over");
    await Promise.all(downstreams.map((d) => d.close()));
  });
  beforeEach(() => {
    fakes.createOrder.clear();
    fakes.behave = async () => {};
  });

  const place = (timeoutMs: number) =>
    checkout.placeOrder({ customerId: "c-9", items: [{ sku: "MUG", quantity: 1 }] }, { timeoutMs, headers: { "Idempotency-Key": "k-1" } });

  test("orders receives the caller's deadline, less than what the caller gave", async () => {
    await place(2000);
    const seen = fakes.createOrder.calls[0]!;
    assert.ok(seen.timeoutMs !== undefined && seen.timeoutMs > 0 && seen.timeoutMs < 2000, `orders received ${seen.timeoutMs} ms of 2000`);
    assert.equal(seen.request.idempotencyKey, "k-1");
  });

  test("an orders that does not answer: DEADLINE_EXCEEDED, and orders sees its call time out", async () => {
    fakes.behave = (ctx) => untilAborted(ctx);
    await expectCode(place(300), Code.DeadlineExceeded);
    assert.equal(fakes.createOrder.calls.length, 1);
    const seen = fakes.createOrder.calls[0]!;
    assert.ok(seen.timeoutMs !== undefined && seen.timeoutMs < 300, `orders' deadline ${seen.timeoutMs} ms is inside the caller's 300`);
    assert.equal(await seen.whenAborted(), true, "orders' call was ended at its deadline");
  });

  test("below the edge nothing retries: an UNAVAILABLE orders is called once and the caller gets UNAVAILABLE", async () => {
    fakes.behave = async () => {
      throw new ConnectError("orders restarting", Code.Unavailable);
    };
    await expectCode(place(3000), Code.Unavailable);
    assert.equal(fakes.createOrder.calls.length, 1);
  });
});
