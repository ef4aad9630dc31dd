// npm test: own process (it reads prom-client's global registry, which every spec's interceptors in a shared process also write)
/**
 * orders' implementation on the real thing it owns, a PostgreSQL with its
 * migrations applied (the embedded one, in a temp dir), served in memory
 * over Connect's router; pricing is a small in-memory PricingService with a
 * catalogue of its own. Asserted: every validation rule (declared in the
 * proto, and the repeated-SKU rule in code) with its code, message and
 * field, the order's arithmetic, the rows written, idempotency keys (replay, reuse for another request, concurrency, expiry), and pricing's
 * failures. Then the implementation wired as main.ts wires it (serve(),
 * the dependency client to pricing), for the deadline on the call to
 * pricing and on the SQL statement.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { after, before, beforeEach, describe, mock, test } from "node:test";
import { Code, ConnectError, type Client, type HandlerContext } from "@connectrpc/connect";
import { createDatabase, migrate, type Database } from "@platform/database";
import { ordersV1, pricingV1 } from "@platform/proto";
import { BadRequestSchema } from "@platform/proto/error-details";
import { apiRoutes, createDependencyClient, createLogger, register, serve, type RunningServer } from "@platform/runtime";
import { type TestServer, activeStatements, adminQuery, eventually, startTestServer } from "../../../packages/database/src/testing/test-server.js";
import {
  expectCode,
  CallLog,
  grpcClient,
  inMemoryClient,
  lockTable,
  startDownstream,
  untilAborted,
  type Downstream,
  type Routes,
} from "@platform/test-support";
import { defaults, loadConfig } from "./config.js";
import { OrderChangeFeed } from "./order-change-feed.js";
import { OrderStore } from "./order-store.js";
import { OrdersService } from "./orders-service.js";

const migrations = fileURLToPath(new URL("../migrations", import.meta.url));
const receiptsMigrations = fileURLToPath(new URL("../../receipts/migrations", import.meta.url));

/** Beyond 2^53: the arithmetic must be exact (bigint), not a double's. */
const goldPrice = 9007199254740993n;
const catalogue = new Map<string, { name: string; currencyCode: string; amountMinor: bigint }>([
  ["MUG", { name: "Mug", currencyCode: "EUR", amountMinor: 1250n }],
  ["TEE", { name: "Tee", currencyCode: "EUR", amountMinor: 2599n }],
  ["GOLD", { name: "Gold bar", currencyCode: "EUR", amountMinor: goldPrice }],
  ["CABLE", { name: "Cable", currencyCode: "USD", amountMinor: 999n }],
]);

/** An in-memory pricing: prices what it knows (and any S<n> at 100 EUR); `behave` may fail or stall a call. */
class FakePricing {
  readonly getPrices = new CallLog<pricingV1.GetPricesRequest>();
  behave: (ctx: HandlerContext) => Promise<void> = async () => {};
  /** SKUs it leaves out of its answer (a pricing bug). */
  omit = new Set<string>();

  readonly routes: Routes = (router) =>
    router.service(pricingV1.PricingService, {
      getPrices: async (req, ctx) => {
        this.getPrices.record(req, ctx);
        await this.behave(ctx);
        const products = [...new Set(req.skus)]
          .filter((s) => !this.omit.has(s))
          .map((sku) => {
            const p = catalogue.get(sku) ?? (/^S\d+$/.test(sku) ? { name: sku, currencyCode: "EUR", amountMinor: 100n } : undefined);
            if (!p) throw new ConnectError(`unknown sku ${JSON.stringify(sku)}`, Code.InvalidArgument);
            return { sku, name: p.name, unitPrice: { currencyCode: p.currencyCode, amountMinor: p.amountMinor } };
          });
        return { products };
      },
      listProducts: async () => ({ products: [] }),
    });

  reset(): void {
    this.getPrices.clear();
    this.behave = async () => {};
    this.omit.clear();
  }
}

let server: TestServer;
let db: Database;
before(async () => {
  server = await startTestServer();
  await migrate(server.url, { schema: "orders", directory: migrations });
  await installReceiptsInterface(server.url);
  db = createDatabase({ name: "orders-db", connectionString: server.url, maxConnections: 4, minBudgetMs: 10, applicationName: "orders-spec" });
});

/**
 * Orders writes each order's receipt in the order's transaction by calling
 * receipts.enqueue_receipt (docs/outbox.md): here the receipts service's own
 * migrations install it, and the receipt row is real.
 */
async function installReceiptsInterface(url: string): Promise<void> {
  await adminQuery(url, "CREATE SCHEMA IF NOT EXISTS receipts");
  await migrate(url, { schema: "receipts", directory: receiptsMigrations });
}
after(async () => {
  try {
    await db?.close();
  } finally {
    await server?.destroy();
  }
});

interface OrderRow {
  id: string;
  customer_id: string;
  status: string;
  currency_code: string;
  total_minor: string;
  created_at: Date;
}
const orderRows = (customerId: string) => adminQuery<OrderRow>(server.url, "SELECT * FROM orders.orders WHERE customer_id = $1", [customerId]);
const itemRows = (orderId: string) =>
  adminQuery<{ line_no: number; sku: string; name: string; quantity: number; currency_code: string; unit_price_minor: string; line_total_minor: string }>(
    server.url,
    "SELECT line_no, sku, name, quantity, currency_code, unit_price_minor, line_total_minor FROM orders.order_items WHERE order_id = $1 ORDER BY line_no",
    [orderId],
  );
const keyRows = (key: string) =>
  adminQuery<{ order_id: string; retention_hours: number }>(
    server.url,
    "SELECT order_id, (extract(epoch FROM expires_at - created_at) / 3600)::float8 AS retention_hours FROM orders.idempotency_records WHERE key = $1",
    [key],
  );
/** A customer id no other test uses, so that its rows are this test's alone. */
const quietLogger = { info() {}, warn() {} };
const newCustomer = () => `c-${randomUUID()}`;

async function idempotencyCount(outcome: "created" | "replayed" | "rejected"): Promise<number> {
  const metric = register.getSingleMetric("orders_idempotency_total");
  const values = metric ? (await metric.get()).values : [];
  return values.filter((v) => v.labels["outcome"] === outcome).reduce((sum, v) => sum + v.value, 0);
}

describe("OrdersService, served in memory on a real database", () => {
  const pricing = new FakePricing();
  let orders: Client<typeof ordersV1.OrdersService>;
  const retentionHours = 6;
  before(() => {
    const impl = new OrdersService({
      store: new OrderStore(db),
      changes: new OrderChangeFeed(server.url, quietLogger),
      pricing: inMemoryClient(pricingV1.PricingService, pricing.routes),
      idempotencyRetentionHours: retentionHours,
    });
    orders = inMemoryClient(ordersV1.OrdersService, apiRoutes(defaults.apis, impl).routes);
  });
  beforeEach(() => pricing.reset());

  describe("validation: each rule answers INVALID_ARGUMENT with a BadRequest naming the field, before pricing is asked or anything is written", () => {
    const item = (sku: string, quantity = 1) => ({ sku, quantity });
    const skuRule = "does not match regex pattern `^[A-Z0-9][A-Z0-9-]{0,63}$`";
    const quantityRule = "must be greater than 0 and less than or equal to 1000";
    const keyPattern = "does not match regex pattern `^[!-~]*$`";
    const customerIdRule = "does not match regex pattern `^[A-Za-z0-9._:@-]*$`";
    const cases: [string, { customerId?: string; items?: { sku: string; quantity: number }[]; idempotencyKey?: string }, string, string][] = [
      ["no customer", { customerId: "" }, "customer_id", "must be at least 1 characters"],
      ["a customer id of 129 characters", { customerId: "c".repeat(129) }, "customer_id", "must be at most 128 characters"],
      ["a customer id with a space", { customerId: "c 1" }, "customer_id", customerIdRule],
      ["a customer id with a slash", { customerId: "c/1" }, "customer_id", customerIdRule],
      ["no items", { items: [] }, "items", "must contain at least 1 item(s)"],
      ["51 items", { items: Array.from({ length: 51 }, (_, i) => item(`S${i}`)) }, "items", "must contain no more than 50 item(s)"],
      ["a lower-case sku", { items: [item("mug")] }, "items[0].sku", skuRule],
      ["an empty sku", { items: [item("")] }, "items[0].sku", skuRule],
      ["a sku starting with a dash", { items: [item("-MUG")] }, "items[0].sku", skuRule],
      ["a sku of 65 characters", { items: [item("A".repeat(65))] }, "items[0].sku", skuRule],
      ["a sku twice", { items: [item("MUG"), item("TEE"), item("MUG")] }, "items[2].sku", "MUG appears twice; combine the quantities"],
      ["a quantity of 0", { items: [item("MUG", 0)] }, "items[0].quantity", quantityRule],
      ["a negative quantity", { items: [item("MUG"), item("TEE", -3)] }, "items[1].quantity", quantityRule],
      ["a quantity of 1001", { items: [item("MUG", 1001)] }, "items[0].quantity", quantityRule],
      ["a key of 256 characters", { idempotencyKey: "k".repeat(256) }, "idempotency_key", "must be at most 255 characters"],
      ["a key with a space", { idempotencyKey: "my key" }, "idempotency_key", keyPattern],
      ["a key beyond ASCII", { idempotencyKey: "cl\u00e9" }, "idempotency_key", keyPattern],
    ];
    for (const [what, fields, field, description] of cases) {
      test(what, async () => {
        const customerId = fields.customerId ?? newCustomer();
        const err = await expectCode(
          orders.createOrder({ customerId, items: [item("MUG")], idempotencyKey: "", ...fields }),
          Code.InvalidArgument,
          new RegExp(`^${escape(field)}:? ${escape(description)}$`),
        );
        assert.deepEqual(
          err.findDetails(BadRequestSchema).flatMap((b) => b.fieldViolations.map((v) => [v.field, v.description])),
          [[field, description]],
        );
        assert.equal(pricing.getPrices.calls.length, 0, "pricing was not asked");
        assert.deepEqual(await orderRows(customerId), [], "nothing was written");
      });
    }

    test("the limits themselves are accepted: 128-character customer id of every allowed character, 50 items, quantity 1000, 64-character sku, 255-character key", async () => {
      const customerId = `Az09._:@-${randomUUID()}`.padEnd(128, "x");
      const items = [item("MUG", 1000), item("A".repeat(64)), ...Array.from({ length: 48 }, (_, i) => item(`S${i}`))];
      // A pricing that knows every sku, at 1 EUR.
      const impl = new OrdersService({
        store: new OrderStore(db),
        changes: new OrderChangeFeed(server.url, quietLogger),
        pricing: inMemoryClient(pricingV1.PricingService, (router) =>
          router.service(pricingV1.PricingService, {
            getPrices: (req) => ({ products: req.skus.map((sku) => ({ sku, name: sku, unitPrice: { currencyCode: "EUR", amountMinor: 1n } })) }),
            listProducts: () => ({ products: [] }),
          }),
        ),
        idempotencyRetentionHours: 1,
      });
      const res = await inMemoryClient(ordersV1.OrdersService, apiRoutes(defaults.apis, impl).routes).createOrder({
        customerId,
        items,
        idempotencyKey: "k".repeat(255),
      });
      assert.equal(res.order?.items.length, 50);
      assert.equal(res.order?.total?.amountMinor, 1000n + 49n);
      assert.equal((await orderRows(customerId)).length, 1);
    });

    test("GetOrder: an empty id, an id that is not a UUID", async () => {
      await expectCode(orders.getOrder({ orderId: "" }), Code.InvalidArgument, /^order_id: value is empty, which is not a valid UUID$/);
      await expectCode(orders.getOrder({ orderId: "42" }), Code.InvalidArgument, /^order_id: must be a valid UUID$/);
    });
  });

  test("prices each line from pricing and totals exactly (bigint beyond 2^53); writes the order and its lines as answered, created_at from the clock", async () => {
    const customerId = newCustomer();
    // A fake clock for the order's timestamp: the response, the row and a later read must all carry it.
    const placedAt = new Date("2031-05-06T07:08:09.123Z");
    mock.timers.enable({ apis: ["Date"], now: placedAt });
    let res;
    try {
      res = await orders.createOrder({
        customerId,
        idempotencyKey: "",
        items: [
          { sku: "TEE", quantity: 2 },
          { sku: "MUG", quantity: 3 },
          { sku: "GOLD", quantity: 1000 },
        ],
      });
    } finally {
      mock.timers.reset();
    }
    const order = res.order!;
    assert.equal(res.replayed, false);
    assert.equal(order.customerId, customerId);
    assert.equal(order.createdAt, placedAt.toISOString());
    assert.deepEqual(
      order.items.map((i) => [i.sku, i.name, i.quantity, i.unitPrice?.amountMinor, i.lineTotal?.amountMinor, i.lineTotal?.currencyCode]),
      [
        ["TEE", "Tee", 2, 2599n, 5198n, "EUR"],
        ["MUG", "Mug", 3, 1250n, 3750n, "EUR"],
        ["GOLD", "Gold bar", 1000, goldPrice, goldPrice * 1000n, "EUR"],
      ],
    );
    // 5198 + 3750 + 9007199254740993000, written out: a double would have rounded it.
    const total = 9007199254741001948n;
    assert.equal(order.total?.amountMinor, total);
    assert.equal(order.total?.currencyCode, "EUR");

    const rows = await orderRows(customerId);
    assert.equal(rows.length, 1);
    assert.deepEqual(
      { id: rows[0]!.id, status: rows[0]!.status, currency: rows[0]!.currency_code, total: rows[0]!.total_minor, createdAt: rows[0]!.created_at.toISOString() },
      { id: order.id, status: "PLACED", currency: "EUR", total: total.toString(), createdAt: placedAt.toISOString() },
    );
    assert.deepEqual(
      (await itemRows(order.id)).map((r) => [r.line_no, r.sku, r.name, r.quantity, r.currency_code, r.unit_price_minor, r.line_total_minor]),
      [
        [1, "TEE", "Tee", 2, "EUR", "2599", "5198"],
        [2, "MUG", "Mug", 3, "EUR", "1250", "3750"],
        [3, "GOLD", "Gold bar", 1000, "EUR", goldPrice.toString(), (goldPrice * 1000n).toString()],
      ],
    );
    assert.deepEqual(await keyRows(""), [], "no key, no idempotency record");

    // Read back as stored: the same order, its id matched case-insensitively.
    const read = await orders.getOrder({ orderId: order.id.toUpperCase() });
    assert.deepEqual(read.order, order);
  });

  test("GetOrder of an order that does not exist: NOT_FOUND naming it", async () => {
    const id = randomUUID();
    await expectCode(orders.getOrder({ orderId: id }), Code.NotFound, new RegExp(`^order ${id} not found$`));
  });

  test("items priced in two currencies: FAILED_PRECONDITION, nothing written", async () => {
    const customerId = newCustomer();
    await expectCode(
      orders.createOrder({
        customerId,
        idempotencyKey: "",
        items: [
          { sku: "MUG", quantity: 1 },
          { sku: "CABLE", quantity: 1 },
        ],
      }),
      Code.FailedPrecondition,
      /^items are priced in different currencies; place one order per currency$/,
    );
    assert.deepEqual(await orderRows(customerId), []);
  });

  test("pricing answers without a sku it was asked for: INTERNAL (pricing's bug, not the caller's), nothing written", async () => {
    const customerId = newCustomer();
    pricing.omit.add("TEE");
    await expectCode(
      orders.createOrder({
        customerId,
        idempotencyKey: "",
        items: [
          { sku: "MUG", quantity: 1 },
          { sku: "TEE", quantity: 1 },
        ],
      }),
      Code.Internal,
      /^pricing returned no price for sku TEE$/,
    );
    assert.deepEqual(await orderRows(customerId), []);
  });

  const pricingErrors: [Code, string][] = [
    [Code.InvalidArgument, 'unknown sku "NOPE"'],
    [Code.Unavailable, "pricing-db: database unavailable"],
    [Code.DeadlineExceeded, "pricing-db: statement cancelled at the deadline"],
    [Code.ResourceExhausted, "pricing: overloaded"],
  ];
  for (const [code, message] of pricingErrors) {
    test(`pricing's ${Code[code]} reaches the caller with its code and message, nothing written`, async () => {
      const customerId = newCustomer();
      pricing.behave = async () => {
        throw new ConnectError(message, code);
      };
      const err = await expectCode(orders.createOrder({ customerId, idempotencyKey: `k-${randomUUID()}`, items: [{ sku: "MUG", quantity: 1 }] }), code);
      assert.equal(err.rawMessage, message);
      assert.deepEqual(await orderRows(customerId), []);
    });
  }

  describe("idempotency keys", () => {
    test("the same key with the same request answers the same order (replayed), stored once, the key kept for the retention period", async () => {
      const customerId = newCustomer();
      const key = `key-${randomUUID()}`;
      const req = { customerId, idempotencyKey: key, items: [{ sku: "MUG", quantity: 2 }] };
      const replayedBefore = await idempotencyCount("replayed");
      const first = await orders.createOrder(req);
      const second = await orders.createOrder(req);
      assert.equal(first.replayed, false);
      assert.equal(second.replayed, true);
      assert.deepEqual(second.order, first.order, "the stored answer, created_at included");
      assert.deepEqual(
        (await orderRows(customerId)).map((r) => r.id),
        [first.order!.id],
      );
      assert.deepEqual(await keyRows(key), [{ order_id: first.order!.id, retention_hours: retentionHours }]);
      assert.equal((await idempotencyCount("replayed")) - replayedBefore, 1);
    });

    test("the same key with a different request is refused with ALREADY_EXISTS naming the key; the first order stays the only one", async () => {
      const customerId = newCustomer();
      const key = `key-${randomUUID()}`;
      const first = await orders.createOrder({ customerId, idempotencyKey: key, items: [{ sku: "MUG", quantity: 2 }] });
      const rejectedBefore = await idempotencyCount("rejected");
      const message = new RegExp(`^idempotency key "${key}" was already used for a different request; use a new key for a new order$`);
      await expectCode(orders.createOrder({ customerId, idempotencyKey: key, items: [{ sku: "MUG", quantity: 3 }] }), Code.AlreadyExists, message);
      await expectCode(orders.createOrder({ customerId, idempotencyKey: key, items: [{ sku: "TEE", quantity: 2 }] }), Code.AlreadyExists, message);
      await expectCode(
        orders.createOrder({ customerId: newCustomer(), idempotencyKey: key, items: [{ sku: "MUG", quantity: 2 }] }),
        Code.AlreadyExists,
        message,
      );
      assert.equal((await idempotencyCount("rejected")) - rejectedBefore, 3);
      assert.deepEqual(
        (await orderRows(customerId)).map((r) => r.id),
        [first.order!.id],
      );
      assert.deepEqual(
        (await keyRows(key)).map((r) => r.order_id),
        [first.order!.id],
      );
    });

    test("without a key, two identical requests are two orders", async () => {
      const customerId = newCustomer();
      const req = { customerId, idempotencyKey: "", items: [{ sku: "MUG", quantity: 1 }] };
      const a = await orders.createOrder(req);
      const b = await orders.createOrder(req);
      assert.notEqual(a.order!.id, b.order!.id);
      assert.equal((await orderRows(customerId)).length, 2);
    });

    test("concurrent requests with one key: one order, every caller gets it", async () => {
      const customerId = newCustomer();
      const key = `key-${randomUUID()}`;
      const req = { customerId, idempotencyKey: key, items: [{ sku: "TEE", quantity: 1 }] };
      const answers = await Promise.all(Array.from({ length: 8 }, () => orders.createOrder(req)));
      const ids = new Set(answers.map((a) => a.order!.id));
      assert.equal(ids.size, 1, "one order id for all");
      assert.equal(answers.filter((a) => !a.replayed).length, 1, "exactly one created it");
      assert.deepEqual(
        (await orderRows(customerId)).map((r) => r.id),
        [...ids],
      );
    });

    test("a retry of a stored order is answered from the store while pricing is down; a new order then gets pricing's error", async () => {
      const customerId = newCustomer();
      const key = `key-${randomUUID()}`;
      const req = { customerId, idempotencyKey: key, items: [{ sku: "MUG", quantity: 1 }] };
      const first = await orders.createOrder(req);
      pricing.behave = async () => {
        throw new ConnectError("pricing: unavailable", Code.Unavailable);
      };
      const again = await orders.createOrder(req);
      assert.equal(again.replayed, true);
      assert.equal(again.order!.id, first.order!.id);
      await expectCode(orders.createOrder({ ...req, idempotencyKey: `key-${randomUUID()}` }), Code.Unavailable, /^pricing: unavailable$/);
      // A reused key for another request is still refused, not hidden behind pricing's outage.
      await expectCode(orders.createOrder({ ...req, items: [{ sku: "TEE", quantity: 1 }] }), Code.AlreadyExists);
      assert.equal((await orderRows(customerId)).length, 1);
    });

    test("an expired key no longer protects: the same key places a new order and the record points to it", async () => {
      const customerId = newCustomer();
      const key = `key-${randomUUID()}`;
      const first = await orders.createOrder({ customerId, idempotencyKey: key, items: [{ sku: "MUG", quantity: 1 }] });
      await adminQuery(server.url, "UPDATE orders.idempotency_records SET expires_at = now() - interval '1 second' WHERE key = $1", [key]);
      const second = await orders.createOrder({ customerId, idempotencyKey: key, items: [{ sku: "TEE", quantity: 1 }] });
      assert.equal(second.replayed, false);
      assert.notEqual(second.order!.id, first.order!.id);
      assert.deepEqual(
        (await keyRows(key)).map((r) => r.order_id),
        [second.order!.id],
      );
    });
  });
});

/**
 * orders as main.ts builds it: serve() with its configuration, pricing
 * through createDependencyClient (`retry: "none"`); pricing is the same
 * kind of fake on a real h2c server, because the dependency client dials a URL.
 */
describe("OrdersService wired as main.ts wires it", () => {
  const pricing = new FakePricing();
  let downstream: Downstream;
  let running: RunningServer;
  let wiredDb: Database;
  let orders: Client<typeof ordersV1.OrdersService>;
  before(async () => {
    downstream = await startDownstream(pricing.routes);
    const config = loadConfig({ PORT: "0", ADMIN_PORT: "0", DATABASE_URL: server.url, PRICING_URL: downstream.baseUrl });
    wiredDb = createDatabase({
      name: "orders-db",
      connectionString: config.databaseUrl,
      maxConnections: config.dbPoolMax,
      minBudgetMs: 10,
      applicationName: "orders-wired",
    });
    const client = createDependencyClient(pricingV1.PricingService, { dependency: config.pricing, server: config.server, retry: "none" });
    const impl = new OrdersService({
      store: new OrderStore(wiredDb),
      changes: new OrderChangeFeed(config.databaseUrl, quietLogger),
      pricing: client,
      idempotencyRetentionHours: config.idempotencyRetentionHours,
    });
    running = await serve({ config: config.server, logger: createLogger("orders", "silent"), ...apiRoutes(defaults.apis, impl) });
    await running.ready;
    orders = grpcClient(ordersV1.OrdersService, running.port);
  });
  after(async () => {
    await running?.shutdown("spec over");
    await wiredDb?.close();
    await downstream?.close();
  });
  beforeEach(() => pricing.reset());

  const create = (customerId: string, timeoutMs: number) =>
    orders.createOrder({ customerId, idempotencyKey: `key-${randomUUID()}`, items: [{ sku: "MUG", quantity: 1 }] }, { timeoutMs });

  test("pricing receives the caller's deadline, less than what the caller gave", async () => {
    await create(newCustomer(), 2000);
    const seen = pricing.getPrices.calls[0]!;
    assert.ok(seen.timeoutMs !== undefined && seen.timeoutMs > 0 && seen.timeoutMs < 2000, `pricing received ${seen.timeoutMs} ms of 2000`);
  });

  test("a pricing that does not answer: DEADLINE_EXCEEDED, pricing sees its call time out, one attempt, nothing written", async () => {
    const customerId = newCustomer();
    pricing.behave = (ctx) => untilAborted(ctx);
    await expectCode(create(customerId, 300), Code.DeadlineExceeded);
    assert.equal(pricing.getPrices.calls.length, 1);
    const seen = pricing.getPrices.calls[0]!;
    assert.ok(seen.timeoutMs !== undefined && seen.timeoutMs < 300, `pricing's deadline ${seen.timeoutMs} ms is inside the caller's 300`);
    assert.equal(await seen.whenAborted(), true, "pricing's call was ended at its deadline");
    assert.deepEqual(await orderRows(customerId), []);
  });

  test("an UNAVAILABLE pricing is called once (nothing retries below the edge) and the caller gets UNAVAILABLE", async () => {
    pricing.behave = async () => {
      throw new ConnectError("pricing restarting", Code.Unavailable);
    };
    await expectCode(create(newCustomer(), 2000), Code.Unavailable);
    assert.equal(pricing.getPrices.calls.length, 1);
  });

  test("the deadline reaches the SQL statement: a write blocked by a lock ends at the deadline, on the server too, and nothing is written", async () => {
    const customerId = newCustomer();
    const release = await lockTable(server.url, "orders.orders");
    try {
      await expectCode(create(customerId, 500), Code.DeadlineExceeded);
      // Gone on the server, not only abandoned by the client: bounded polling, not a timer claim.
      assert.ok(
        await eventually(async () => (await activeStatements(server.url, "orders-wired")).length === 0),
        "the blocked statement was cancelled on the server",
      );
    } finally {
      await release();
    }
    assert.equal(pricing.getPrices.calls.length, 1, "priced before the write");
    assert.deepEqual(await orderRows(customerId), []);
  });
});

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
