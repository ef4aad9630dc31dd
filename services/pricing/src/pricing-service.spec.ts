/**
 * pricing's implementation on a real PostgreSQL (the embedded one, in a
 * temp dir) with its migrations and a catalogue of this spec's own, served
 * in memory over Connect's router: the catalogue as stored (order, exact
 * prices), every rule of GetPrices with its code and message, and a
 * database that cannot be reached. Then the implementation wired as
 * main.ts wires it (serve()), for the deadline reaching the SQL statement.
 */
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { Code, type Client } from "@connectrpc/connect";
import { createDatabase, migrate, type Database } from "@platform/database";
import { pricingV1 } from "@platform/proto";
import { apiRoutes, createLogger, serve, type RunningServer } from "@platform/runtime";
import { type TestServer, activeStatements, adminQuery, eventually, startTestServer } from "../../../packages/database/src/testing/test-server.js";
import { expectCode, grpcClient, inMemoryClient, lockTable } from "@platform/test-support";
import { defaults, loadConfig } from "./config.js";
import { PricingService, maxSkusPerCall } from "./pricing-service.js";

const migrations = fileURLToPath(new URL("../migrations", import.meta.url));

/** The largest price a bigint column holds: it must come back to the last digit. */
const int64Max = 9223372036854775807n;
const rows: [string, string, string, bigint][] = [
  ["TEE", "Tee", "EUR", 2599n],
  ["MUG", "Mug", "EUR", 1250n],
  ["FREE-STICKER", "Sticker", "EUR", 0n],
  ["YACHT", "Yacht", "JPY", int64Max],
  ...Array.from({ length: 120 }, (_, i): [string, string, string, bigint] => [`S${String(i).padStart(3, "0")}`, `Item ${i}`, "EUR", BigInt(i)]),
];

let server: TestServer;
let db: Database;
before(async () => {
  server = await startTestServer();
  await migrate(server.url, { schema: "pricing", directory: migrations });
  for (const [sku, name, currency, price] of rows) {
    await adminQuery(server.url, "INSERT INTO pricing.products (sku, name, currency_code, unit_price_minor) VALUES ($1, $2, $3, $4)", [
      sku,
      name,
      currency,
      price.toString(),
    ]);
  }
  db = createDatabase({ name: "pricing-db", connectionString: server.url, maxConnections: 2, minBudgetMs: 10, applicationName: "pricing-spec" });
});
after(async () => {
  try {
    await db?.close();
  } finally {
    await server?.destroy();
  }
});

const named = (products: { sku: string; name: string; unitPrice?: { currencyCode: string; amountMinor: bigint } }[]) =>
  products.map((p) => [p.sku, p.name, p.unitPrice?.currencyCode, p.unitPrice?.amountMinor]);

describe("PricingService, served in memory on a real database", () => {
  let pricing: Client<typeof pricingV1.PricingService>;
  before(() => {
    pricing = inMemoryClient(pricingV1.PricingService, apiRoutes(defaults.apis, new PricingService(db)).routes);
  });

  test("ListProducts: the whole catalogue ordered by sku, prices exact up to the largest int64", async () => {
    const { products } = await pricing.listProducts({});
    assert.equal(products.length, rows.length);
    assert.deepEqual(
      products.map((p) => p.sku),
      rows.map((r) => r[0]).sort(),
    );
    assert.deepEqual(named(products.filter((p) => !p.sku.startsWith("S"))), [
      ["FREE-STICKER", "Sticker", "EUR", 0n],
      ["MUG", "Mug", "EUR", 1250n],
      ["TEE", "Tee", "EUR", 2599n],
      ["YACHT", "Yacht", "JPY", int64Max],
    ]);
  });

  test("GetPrices: one product per distinct sku asked for, in the order first asked", async () => {
    const { products } = await pricing.getPrices({ skus: ["YACHT", "MUG", "YACHT", "FREE-STICKER", "MUG"] });
    assert.deepEqual(named(products), [
      ["YACHT", "Yacht", "JPY", int64Max],
      ["MUG", "Mug", "EUR", 1250n],
      ["FREE-STICKER", "Sticker", "EUR", 0n],
    ]);
  });

  test(`GetPrices: exactly ${maxSkusPerCall} skus are answered`, async () => {
    const skus = rows
      .filter((r) => r[0].startsWith("S"))
      .slice(0, maxSkusPerCall)
      .map((r) => r[0]);
    const { products } = await pricing.getPrices({ skus });
    assert.equal(products.length, maxSkusPerCall);
    assert.deepEqual(
      products.map((p) => p.unitPrice?.amountMinor),
      skus.map((_, i) => BigInt(i)),
    );
  });

  test("GetPrices: no skus is INVALID_ARGUMENT", async () => {
    await expectCode(pricing.getPrices({ skus: [] }), Code.InvalidArgument, /^skus: must contain at least 1 item\(s\)$/);
  });

  test(`GetPrices: more than ${maxSkusPerCall} skus is INVALID_ARGUMENT, counted before any work (duplicates included)`, async () => {
    await expectCode(
      pricing.getPrices({ skus: Array.from({ length: 101 }, () => "MUG") }),
      Code.InvalidArgument,
      /^skus: must contain no more than 100 item\(s\)$/,
    );
  });

  test("GetPrices: an unknown sku is INVALID_ARGUMENT naming the first one missing", async () => {
    await expectCode(pricing.getPrices({ skus: ["MUG", "NOPE", "ALSO-NOPE"] }), Code.InvalidArgument, /^unknown sku "NOPE"$/);
    // Not a pattern match: a sku with SQL in it is only ever a parameter.
    await expectCode(pricing.getPrices({ skus: ["MUG' OR '1'='1"] }), Code.InvalidArgument, /^unknown sku "MUG' OR '1'='1"$/);
  });

  test("a database that cannot be reached: UNAVAILABLE naming pricing's database", async () => {
    const closedPort = await freePort();
    const unreachable = createDatabase({
      name: "pricing-db",
      connectionString: `postgres://postgres@127.0.0.1:${closedPort}/postgres`,
      maxConnections: 1,
      minBudgetMs: 10,
    });
    try {
      const client = inMemoryClient(pricingV1.PricingService, apiRoutes(defaults.apis, new PricingService(unreachable)).routes);
      await expectCode(client.getPrices({ skus: ["MUG"] }), Code.Unavailable, /^pricing-db: database unavailable/);
      await expectCode(client.listProducts({}), Code.Unavailable, /^pricing-db: database unavailable/);
    } finally {
      await unreachable.close();
    }
  });
});

describe("PricingService wired as main.ts wires it", () => {
  let running: RunningServer;
  let wiredDb: Database;
  let pricing: Client<typeof pricingV1.PricingService>;
  before(async () => {
    const config = loadConfig({ PORT: "0", ADMIN_PORT: "0", DATABASE_URL: server.url });
    wiredDb = createDatabase({
      name: "pricing-db",
      connectionString: config.databaseUrl,
      maxConnections: config.dbPoolMax,
      minBudgetMs: 10,
      applicationName: "pricing-wired",
    });
    running = await serve({ config: config.server, logger: createLogger("pricing", "silent"), ...apiRoutes(defaults.apis, new PricingService(wiredDb)) });
    await running.ready;
    pricing = grpcClient(pricingV1.PricingService, running.port);
  });
  after(async () => {
    await running?.shutdown("spec over");
    await wiredDb?.close();
  });

  test("answers within a deadline", async () => {
    const { products } = await pricing.getPrices({ skus: ["MUG"] }, { timeoutMs: 2000 });
    assert.deepEqual(named(products), [["MUG", "Mug", "EUR", 1250n]]);
  });

  test("the deadline reaches the SQL statement: a read blocked by a lock ends at the deadline, on the server too", async () => {
    const release = await lockTable(server.url, "pricing.products");
    try {
      await expectCode(pricing.getPrices({ skus: ["MUG"] }, { timeoutMs: 400 }), Code.DeadlineExceeded);
      // Gone on the server, not only abandoned by the client: bounded polling, not a timer claim.
      assert.ok(
        await eventually(async () => (await activeStatements(server.url, "pricing-wired")).length === 0),
        "the blocked statement was cancelled on the server",
      );
    } finally {
      await release();
    }
    // And the pool is whole again: the next call is served.
    const { products } = await pricing.getPrices({ skus: ["TEE"] }, { timeoutMs: 2000 });
    assert.equal(products[0]?.unitPrice?.amountMinor, 2599n);
  });
});

/** A loopback port nothing listens on (bound, then released). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}
