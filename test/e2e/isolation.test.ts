/**
 * Isolation (invariant 6): a slow pricing database exhausts only pricing's
 * slots, and a failing pricing is cut off by its breaker, while the paths
 * that do not need it keep working. Real processes and PostgreSQL.
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { eventually, metricValue, setServiceFaults, startTestPlatform, type TestPlatform } from "../support/platform.js";

let p: TestPlatform;
before(async () => {
  p = await startTestPlatform({
    env: { LOG_LEVEL: "warn" },
    serviceEnv: {
      // The breaker under test is orders' breaker for pricing; the outer
      // ones stay out of the way so the counts below are orders' alone.
      gateway: { BREAKER_VOLUME_THRESHOLD: "100000" },
      checkout: { BREAKER_VOLUME_THRESHOLD: "100000" },
      orders: { BREAKER_VOLUME_THRESHOLD: "10", BREAKER_RESET_MS: "1000", PRICING_MAX_CONCURRENT: "2", PRICING_MAX_QUEUE: "2" },
    },
  });
});
after(async () => {
  await p?.close();
});
beforeEach(async () => {
  for (const s of ["gateway", "checkout", "orders", "pricing"] as const) await setServiceFaults(p, s, {});
});

describe("a slow pricing database", () => {
  test("GetOrder keeps succeeding while PlaceOrder fails fast; pricing's bulkhead rejects instead of queueing", async () => {
    const client = p.client("grpc");
    const { order } = await client.placeOrder({ customerId: `iso-${randomUUID()}`, items: [{ sku: "MUG-CERAMIC", quantity: 1 }] });
    await setServiceFaults(p, "pricing", { db: { latencyMs: 5000 } });
    const rejectedBefore = metricValue(await p.metrics("orders"), "bulkhead_rejected_total", { dependency: "pricing", reason: "full" });

    const placeOrders = Array.from({ length: 24 }, async () => {
      const started = performance.now();
      try {
        await client.placeOrder({ customerId: `iso-slow-${randomUUID()}`, items: [{ sku: "MUG-CERAMIC", quantity: 1 }] }, { timeoutMs: 3000 });
        return { ok: true, ms: performance.now() - started, code: "ok" };
      } catch (e) {
        return { ok: false, ms: performance.now() - started, code: Code[ConnectError.from(e).code] };
      }
    });
    const getOrders = Array.from({ length: 24 }, async (_, i) => {
      await new Promise((r) => setTimeout(r, i * 30));
      return client.getOrder({ orderId: order!.id }, { timeoutMs: 5000 }).then(
        () => true,
        () => false,
      );
    });
    const [places, gets] = await Promise.all([Promise.all(placeOrders), Promise.all(getOrders)]);
    const getSuccess = gets.filter(Boolean).length / gets.length;
    const failedPlaces = places.filter((x) => !x.ok);
    const sorted = failedPlaces.map((x) => x.ms).sort((a, b) => a - b);
    console.log(
      `[isolation] GetOrder success ${(getSuccess * 100).toFixed(0)}%; PlaceOrder failed ${failedPlaces.length}/${places.length}, ` +
        `failure latency p50 ${sorted[Math.floor(sorted.length / 2)]?.toFixed(0)} ms, codes ${JSON.stringify(countBy(failedPlaces.map((x) => x.code)))}`,
    );
    assert.equal(getSuccess, 1, "every GetOrder succeeded");
    assert.equal(failedPlaces.length, places.length, "every PlaceOrder failed (pricing is too slow for its deadline)");
    const rejected = metricValue(await p.metrics("orders"), "bulkhead_rejected_total", { dependency: "pricing", reason: "full" }) - rejectedBefore;
    assert.ok(rejected > 0, "pricing's bulkhead rejected the excess instead of queueing it");
    assert.ok(metricValue(await p.metrics("orders"), "bulkhead_in_use", { dependency: "pricing" }) <= 2);
  });
});

describe("pricing failing every call", () => {
  test("orders' breaker opens after the minimum volume, stops calling pricing, and closes after recovery", async () => {
    await eventually(async () => metricValue(await p.metrics("orders"), "circuit_breaker_state", { dependency: "pricing", method: "GetPrices" }) === 0, "breaker closed at start", 100, 100);
    // The previous test may have left checkout's breaker for CreateOrder open: wait for a trial to close it.
    let existing: { id: string } | undefined;
    await eventually(
      async () => {
        try {
          existing = (await p.client("grpc").placeOrder({ customerId: `brk-before-${randomUUID()}`, items: [{ sku: "MUG-CERAMIC", quantity: 1 }] })).order;
          return true;
        } catch {
          return false;
        }
      },
      "an order can be placed before the outage",
      60,
      250,
    );
    await setServiceFaults(p, "pricing", { db: { errorRate: 1 } });
    const calls = async () => metricValue(await p.metrics("pricing"), "rpc_server_requests_total", { procedure: "/pricing.v1.PricingService/GetPrices" });
    const before = await calls();
    const client = p.client("grpc");
    const n = 40;
    let circuitOpenMessages = 0;
    for (let i = 0; i < n; i++) {
      try {
        await client.placeOrder({ customerId: `brk-${i}`, items: [{ sku: "MUG-CERAMIC", quantity: 1 }] });
      } catch (e) {
        const err = ConnectError.from(e);
        assert.equal(Code[err.code], "Unavailable");
        if (/circuit open/.test(err.rawMessage)) circuitOpenMessages++;
      }
    }
    const reached = (await calls()) - before;
    const orders = await p.metrics("orders");
    console.log(`[breaker] ${n} user requests; ${reached} reached pricing; ${circuitOpenMessages} answered "circuit open"`);
    assert.equal(metricValue(orders, "circuit_breaker_state", { dependency: "pricing", method: "GetPrices" }), 2, "open");
    assert.ok(metricValue(orders, "circuit_breaker_rejected_total", { dependency: "pricing" }) > 0);
    assert.ok(circuitOpenMessages > 0, "callers are told the circuit is open, naming the dependency");
    assert.ok(reached < n, `calls reaching pricing (${reached}) fewer than user requests (${n})`);
    // Reading an order never needs pricing: it keeps working during the outage.
    const read = await client.getOrder({ orderId: existing!.id });
    assert.equal(read.order?.id, existing!.id);

    await setServiceFaults(p, "pricing", {});
    await eventually(
      async () => {
        try {
          await client.placeOrder({ customerId: `brk-recover-${randomUUID()}`, items: [{ sku: "MUG-CERAMIC", quantity: 1 }] });
          return true;
        } catch {
          return false;
        }
      },
      "orders succeed again after recovery",
      50,
      200,
    );
    assert.equal(metricValue(await p.metrics("orders"), "circuit_breaker_state", { dependency: "pricing", method: "GetPrices" }), 0, "closed again");
  });
});

function countBy(xs: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of xs) out[x] = (out[x] ?? 0) + 1;
  return out;
}
