import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { readPlatformFacts } from "./source-facts.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));

test("facts read from the services' source: variables read, database use, the code's defaults", () => {
  const facts = readPlatformFacts(root, { gateway: [], checkout: ["gateway"], orders: ["checkout"] }, "gateway");
  const { gateway, checkout, orders } = facts.services;
  assert.ok(gateway && checkout && orders);
  // Per-dependency names from dependency-config.ts's templates, for the API the gateway forwards and checkout's dependencies.
  assert.ok(gateway.env.has("CHECKOUT_URL") && gateway.env.has("CHECKOUT_MAX_CONCURRENT"));
  assert.ok(checkout.env.has("ORDERS_URL") && !checkout.env.has("DATABASE_URL"));
  assert.ok(!gateway.env.has("ORDERS_URL"), "the gateway calls no orders");
  assert.equal(orders.needsDatabase, true);
  assert.equal(checkout.needsDatabase, false);
  assert.ok(Number.isInteger(orders.dbPoolMaxDefault) && (orders.dbPoolMaxDefault ?? 0) > 0);
  assert.ok(facts.defaultDrainMs > 0);
  assert.deepEqual(checkout.callers, ["gateway"]);
});

test("the public service must be one of the call graph's", () => {
  assert.throws(() => readPlatformFacts(root, { checkout: [] }, "gateway"), /the public service gateway is not in the call graph \(checkout\)/);
});
