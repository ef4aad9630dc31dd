/**
 * orders stores each idempotency record's response as protobuf bytes:
 * orders.v1.Order, the wire twin of checkout.v1.Order, which older rows
 * hold. A row written as checkout.v1.Order, in a real orders schema, must
 * still answer a repeated request with the same order.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { create, toBinary } from "@bufbuild/protobuf";
import { createDatabase, migrate, type Database } from "@platform/database";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "@platform/embedded-postgres";
import { checkoutV1 } from "@platform/proto";
import { publicOrder } from "@platform/proto/public-twins";
import pg from "pg";
import { OrderStore } from "../services/orders/src/order-store.js";
import { tempDataDir } from "@platform/test-support";
import { rmSync } from "node:fs";
import { join } from "node:path";

let server: EmbeddedPostgres;
let db: Database;
let dir: string;

before(async () => {
  dir = tempDataDir();
  server = await startEmbeddedPostgres({ dataDir: join(dir, "pg") });
  await migrate(server.url, { schema: "orders", directory: fileURLToPath(new URL("../services/orders/migrations", import.meta.url)) });
  db = createDatabase({ name: "orders-db", connectionString: server.url, maxConnections: 2, minBudgetMs: 10 });
});
after(async () => {
  await db?.close();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test("an idempotency record written as checkout.v1.Order bytes is replayed as the same order", async () => {
  const old = create(checkoutV1.OrderSchema, {
    id: "7d1c3f0e-2a4b-4c5d-8e9f-0a1b2c3d4e5f",
    status: checkoutV1.OrderStatus.PLACED,
    customerId: "bob",
    items: [
      {
        sku: "MUG-CERAMIC",
        name: "Ceramic mug",
        quantity: 3,
        unitPrice: { currencyCode: "USD", amountMinor: 1299n },
        lineTotal: { currencyCode: "USD", amountMinor: 3897n },
      },
    ],
    total: { currencyCode: "USD", amountMinor: 3897n },
    createdAt: "2026-11-01T10:00:00.000Z",
  });
  // The row as the orders service wrote it before: the old message's bytes.
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  try {
    await client.query("INSERT INTO orders.orders (id, customer_id, currency_code, total_minor, created_at) VALUES ($1, 'bob', 'USD', 3897, $2)", [
      old.id,
      old.createdAt,
    ]);
    await client.query(
      "INSERT INTO orders.idempotency_records (key, request_hash, order_id, response, expires_at) VALUES ('old-key', 'h1', $1, $2, now() + interval '1 hour')",
      [old.id, Buffer.from(toBinary(checkoutV1.OrderSchema, old))],
    );
  } finally {
    await client.end();
  }
  const record = await new OrderStore(db).findByKey("old-key");
  assert.ok(record, "the record is found");
  assert.equal(record.requestHash, "h1");
  assert.equal(record.order.$typeName, "orders.v1.Order");
  assert.deepEqual(publicOrder(record.order), old, "the replayed order is the one stored, field for field");
});
