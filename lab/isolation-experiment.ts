/**
 * `npm run experiment:isolation [-- BURST]`: the slow-pricing experiment of the
 * isolation issue, twice in one run on fresh platforms: with orders' bulkhead
 * for pricing (2 in flight + 2 queued) and with it effectively removed (one
 * shared, unbounded path to pricing). Prints GetOrder's success rate (a path
 * that never needs pricing) and PlaceOrder's failure latency for both.
 */
import { randomUUID } from "node:crypto";
import { ConnectError, Code } from "@connectrpc/connect";
import { setServiceFaults, startTestPlatform } from "../test/support/platform.js";

const burst = Number(process.argv[2] ?? 30); // PlaceOrders, 50 ms apart, with as many GetOrders interleaved

async function run(label: string, pricingBulkhead: { concurrent: string; queue: string }) {
  const p = await startTestPlatform({
    env: { LOG_LEVEL: "warn" },
    serviceEnv: { orders: { PRICING_MAX_CONCURRENT: pricingBulkhead.concurrent, PRICING_MAX_QUEUE: pricingBulkhead.queue } },
  });
  try {
    const client = p.client("grpc");
    const { order } = await client.placeOrder({ customerId: `exp-${randomUUID()}`, items: [{ sku: "MUG-CERAMIC", quantity: 1 }] });
    await setServiceFaults(p, "pricing", { db: { latencyMs: 5000 } });
    const places = Array.from({ length: burst }, async (_, i) => {
      await new Promise((r) => setTimeout(r, i * 50));
      const started = performance.now();
      try {
        await client.placeOrder({ customerId: `exp-${randomUUID()}`, items: [{ sku: "MUG-CERAMIC", quantity: 1 }] }, { timeoutMs: 3000 });
        return { ok: true, ms: performance.now() - started, code: "ok" };
      } catch (e) {
        return { ok: false, ms: performance.now() - started, code: Code[ConnectError.from(e).code] ?? "?" };
      }
    });
    const gets = Array.from({ length: burst }, async (_, i) => {
      await new Promise((r) => setTimeout(r, 200 + i * 50));
      return client.getOrder({ orderId: order!.id }, { timeoutMs: 3000 }).then(
        () => true,
        () => false,
      );
    });
    const [placed, got] = await Promise.all([Promise.all(places), Promise.all(gets)]);
    const failed = placed.filter((x) => !x.ok).map((x) => x.ms).sort((a, b) => a - b);
    const pct = (q: number) => failed[Math.min(failed.length - 1, Math.floor(q * failed.length))]?.toFixed(0) ?? "-";
    const codes: Record<string, number> = {};
    for (const x of placed.filter((y) => !y.ok)) codes[x.code] = (codes[x.code] ?? 0) + 1;
    console.log(
      `${label.padEnd(28)} GetOrder success ${((got.filter(Boolean).length / got.length) * 100).toFixed(0).padStart(3)}%   ` +
        `PlaceOrder failed ${failed.length}/${placed.length}, failure latency p50 ${pct(0.5)} ms p99 ${pct(0.99)} ms   ${JSON.stringify(codes)}`,
    );
  } finally {
    await p.close();
  }
}

await run("bulkheads on (2 + 2)", { concurrent: "2", queue: "2" });
await run("one shared unbounded path", { concurrent: "10000", queue: "100000" });
