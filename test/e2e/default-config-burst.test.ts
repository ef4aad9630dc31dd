/**
 * The platform as shipped, no mechanism switched off (no resilience
 * variable is set: deadlines, gateway retries with their budget,
 * idempotency keys, bulkheads with adaptive limits, breakers, admission,
 * intake), hit by a burst of PlaceOrder over real HTTP/2 (gRPC) while
 * pricing is slow and flaky and some of orders' answers to checkout are
 * lost on the way (the order is stored, checkout sees UNAVAILABLE: the
 * failure idempotency keys exist for). Asserted, from what callers saw and
 * from each service's own metrics and request logs:
 * - the codes: each call succeeds or fails with a clear, retryable code;
 * - no hop works on a request past its deadline (every hop's log line);
 * - exactly one layer retries, and its budget bounds the attempts that
 *   reach pricing;
 * - orders rows = successful responses: every acknowledged order once,
 *   nothing else, also after the uncertain ones are asked again;
 * - once the fault is lifted the platform serves again (bounded polling).
 * default-config.test.ts holds the same configuration to its contract
 * under a slow database, a frozen dependency and overload.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { loadConfig as loadGatewayConfig } from "../../services/gateway/src/config.js";
import { eventually, logLines, metricValue, retryReserveOver, setServiceFaults, startTestPlatform, type TestPlatform } from "@platform/test-support";
import type { Platform } from "@platform/launcher";

type Service = keyof Platform["services"];
const services: Service[] = ["gateway", "checkout", "orders", "pricing"];

/** Fault injection is off unless enabled; this test enables it explicitly (a fresh admin token per run). */
async function injectFaults(p: TestPlatform, service: Service, faults: object): Promise<void> {
  await setServiceFaults(p, service, faults);
}

/**
 * The burst: `waves` rounds of `waveSize` PlaceOrder calls at once, each
 * call with its own customer, key and request id. Enough failures that the
 * retry budget, not the deadline, is what limits the retries.
 */
const waves = 3;
const waveSize = 48;
const burstSize = waves * waveSize;
/** Room for the fault's latency at pricing and retries, on a loaded 2-core machine. */
const timeoutMs = 5000;
/**
 * How far past its deadline a hop may log a request as finished: the
 * deadline timer's lateness on a loaded event loop. A bound against work
 * that runs on (a hop racing nothing would log the fault's whole latency,
 * or hang), not a speed claim.
 */
const hopGraceMs = 500;
/** What a caller may see under this fault: success, or a clear code it can retry with the same key. */
const allowed = new Set<Code | "ok">(["ok", Code.Unavailable, Code.DeadlineExceeded, Code.ResourceExhausted]);
const sku = "MUG-CERAMIC";
const unitPriceMinor = 1200n;

interface BurstCall {
  customerId: string;
  key: string;
  requestId: string;
  quantity: number;
  code: Code | "ok";
  message: string;
  orderId?: string;
  settledAfterMs: number;
}

let p: TestPlatform;
before(async () => {
  p = await startTestPlatform({ faultInjection: true, env: { LOG_LEVEL: "info" } });
});
after(async () => {
  await p?.close();
});

async function snapshot() {
  const text = Object.fromEntries(await Promise.all(services.map(async (s) => [s, await p.metrics(s)] as const))) as Record<Service, string>;
  return {
    userRequests: metricValue(text.gateway, "rpc_server_requests_total", { procedure: "/checkout.v1.CheckoutService/PlaceOrder" }),
    gatewayAttempts: metricValue(text.gateway, "rpc_client_calls_total", { dependency: "checkout" }),
    retries: metricValue(text.gateway, "retry_retries_total", { dependency: "checkout" }),
    refusedByBudget: metricValue(text.gateway, "retry_refused_total", { dependency: "checkout", reason: "budget_exhausted" }),
    refusedByDeadline: metricValue(text.gateway, "retry_refused_total", { dependency: "checkout", reason: "deadline" }),
    refusedAtMaxAttempts: metricValue(text.gateway, "retry_refused_total", { dependency: "checkout", reason: "max_attempts" }),
    checkoutReceived: metricValue(text.checkout, "rpc_server_requests_total", { procedure: "/checkout.v1.CheckoutService/PlaceOrder" }),
    ordersReceived: metricValue(text.orders, "rpc_server_requests_total", { procedure: "/orders.v1.OrdersService/CreateOrder" }),
    pricingReceived: metricValue(text.pricing, "rpc_server_requests_total", { procedure: "/pricing.v1.PricingService/GetPrices" }),
    replayed: metricValue(text.orders, "orders_idempotency_total", { outcome: "replayed" }),
    missingDeadlines:
      metricValue(text.checkout, "deadline_missing_total") +
      metricValue(text.orders, "deadline_missing_total") +
      metricValue(text.pricing, "deadline_missing_total"),
  };
}
type Snapshot = Awaited<ReturnType<typeof snapshot>>;
const delta = (a: Snapshot, b: Snapshot) => Object.fromEntries(Object.keys(a).map((k) => [k, b[k as keyof Snapshot] - a[k as keyof Snapshot]])) as Snapshot;

async function placeOrder(
  call: Pick<BurstCall, "customerId" | "key" | "requestId" | "quantity">,
  deadlineMs: number,
): Promise<Pick<BurstCall, "code" | "message" | "orderId" | "settledAfterMs">> {
  const started = performance.now();
  try {
    const { order } = await p
      .client("grpc")
      .placeOrder(
        { customerId: call.customerId, items: [{ sku, quantity: call.quantity }] },
        { timeoutMs: deadlineMs, headers: { "Idempotency-Key": call.key, "x-request-id": call.requestId } },
      );
    if (!order?.id) throw new ConnectError("an empty success", Code.Internal);
    assert.equal(order.total?.amountMinor, unitPriceMinor * BigInt(call.quantity), "priced right under the fault");
    return { code: "ok", message: "", orderId: order.id, settledAfterMs: performance.now() - started };
  } catch (e) {
    const err = ConnectError.from(e);
    return { code: err.code, message: err.rawMessage, settledAfterMs: performance.now() - started };
  }
}

const codeName = (c: Code | "ok") => (c === "ok" ? "ok" : Code[c]);
function histogram(calls: { code: Code | "ok" }[]): string {
  const h: Record<string, number> = {};
  for (const c of calls) h[codeName(c.code)] = (h[codeName(c.code)] ?? 0) + 1;
  return JSON.stringify(h);
}

describe("the shipped configuration, a burst under a slow and flaky pricing", () => {
  test("clear codes, no hop past its deadline, retries within the budget, orders rows = successful responses, recovery", async () => {
    const run = randomUUID().slice(0, 8);
    // The platform serves before the fault (bounded polling).
    let warm = 0;
    await eventually(
      async () =>
        (await placeOrder({ customerId: `warm-${run}-${warm}`, key: `warm-${run}-${warm++}`, requestId: `warm-${run}-${warm}`, quantity: 1 }, 3000)).code ===
        "ok",
      "orders flow before the fault",
      50,
      100,
    );

    // The fault: pricing answers late (200 ms) and fails half of its calls; a fifth of orders'
    // answers to checkout are lost after the order was stored.
    await injectFaults(p, "pricing", { handler: { latencyMs: 200, errorRate: 0.25 } });
    await injectFaults(p, "checkout", { dependencies: { orders: { dropResponseRate: 0.15 } } });
    const before = await snapshot();
    const calls: BurstCall[] = [];
    const burstStarted = performance.now();
    for (let w = 0; w < waves; w++) {
      const wave = await Promise.all(
        Array.from({ length: waveSize }, async (_, j) => {
          const i = w * waveSize + j;
          const call = { customerId: `burst-${run}-${i}`, key: `burst-key-${run}-${i}`, requestId: `burst-${run}-${i}`, quantity: 1 + (i % 3) };
          return { ...call, ...(await placeOrder(call, timeoutMs)) };
        }),
      );
      calls.push(...wave);
    }
    const burstMs = performance.now() - burstStarted;
    // Every hop is done with the burst (what a hop still does after its caller has its answer is
    // counted too): bounded polling of the in-flight gauges.
    await eventually(
      async () => (await Promise.all(services.map(async (s) => metricValue(await p.metrics(s), "rpc_server_in_flight")))).every((n) => n === 0),
      "every hop finished the burst",
      100,
      100,
    );
    const d = delta(before, await snapshot());
    for (const s of ["pricing", "checkout"] as const) await injectFaults(p, s, {});
    console.log(`[default burst] ${burstSize} calls in ${Math.round(burstMs)} ms ${histogram(calls)}; metrics ${JSON.stringify(d)}`);
    const messages: Record<string, number> = {};
    for (const c of calls.filter((x) => x.code !== "ok"))
      messages[`${codeName(c.code)}: ${c.message.replace(/\d+/g, "N")}`] = (messages[`${codeName(c.code)}: ${c.message.replace(/\d+/g, "N")}`] ?? 0) + 1;
    console.log(`[default burst] failures by message ${JSON.stringify(messages)}`);

    // Codes: each call settled with success or a clear, retryable code, within its deadline (plus a bound against hangs).
    assert.deepEqual(
      calls.filter((c) => !allowed.has(c.code)).map((c) => `${codeName(c.code)}: ${c.message}`),
      [],
      "only clear, retryable failures",
    );
    assert.deepEqual(
      calls.filter((c) => c.settledAfterMs > timeoutMs + hopGraceMs).map((c) => `${codeName(c.code)} after ${Math.round(c.settledAfterMs)} ms`),
      [],
      "every call settled by its deadline",
    );
    assert.ok(
      calls.some((c) => c.code === "ok"),
      "the platform kept serving under the fault",
    );
    // Each UNAVAILABLE names its cause: the injected fault, or the mechanism that refused at once.
    const causes = /injected fault: (handler failed|response from orders lost)|circuit open|bulkhead full|expected wait for a slot|refused before processing/;
    assert.deepEqual(
      calls.filter((c) => c.code === Code.Unavailable && !causes.test(c.message)).map((c) => c.message),
      [],
      "every UNAVAILABLE names its cause",
    );
    // Requests refused before any handler ran (admission: "not now") are not user requests the retry layer saw.
    assert.ok(d.userRequests <= burstSize && d.userRequests > 0, `${d.userRequests} of ${burstSize} reached the gateway's handler`);

    // Exactly one layer retries, and its budget bounds the attempts: at most 1 + its share (10 %) per
    // user request, plus the budget's minimum reserve and the share earned by earlier requests still in
    // its window. In the shipped configuration the budget is not alone: a retry that cannot finish in
    // the time left is not made, and a breaker refuses at once; this holds the combination to the
    // budget's bound. (The budget alone, breakers off, is held to it in retries.test.ts.) Withdrawals
    // age out of the budget's window after 9/10 of its ttl at the earliest, so a burst longer than that
    // (its length is the machine's: measured, not assumed) gets the reserve once more per such stretch.
    const budget = loadGatewayConfig({}).retry.budget;
    const { windows, retries: reserve } = retryReserveOver(budget, burstMs);
    const earned = before.userRequests * budget.percentCanRetry;
    const bound = d.userRequests * (1 + budget.percentCanRetry) + reserve + earned;
    assert.ok(d.retries + d.refusedByBudget + d.refusedByDeadline > 0, "the fault made the gateway want to retry");
    assert.ok(
      d.gatewayAttempts <= bound,
      `${d.gatewayAttempts} attempts at checkout, at most ${bound.toFixed(1)} (reserve ${reserve} over ${windows} windows in ${Math.round(burstMs)} ms)`,
    );
    assert.ok(d.checkoutReceived <= d.gatewayAttempts, "checkout received at most the gateway's attempts");
    assert.ok(d.ordersReceived <= d.checkoutReceived, "checkout called orders at most once per request (no retry below the edge)");
    assert.ok(d.pricingReceived <= d.ordersReceived, "orders called pricing at most once per request (no retry below the edge)");
    assert.ok(d.pricingReceived <= bound, `${d.pricingReceived} calls reached pricing, at most ${bound.toFixed(1)}`);
    assert.equal(d.missingDeadlines, 0, "every inner hop received a deadline");

    // No hop works past the deadline: every hop's request log line for the burst (found by the request id
    // the client sent, carried to every hop) carries a deadline no longer than the client's, from the
    // client, and finished within it.
    const ids = new Set(calls.map((c) => c.requestId));
    const burstLines = (s: Service) => logLines(p, s).filter((l) => l["msg"] === "rpc" && ids.has(String(l["requestId"])));
    await eventually(
      () => new Set(burstLines("gateway").map((l) => l["requestId"])).size === d.userRequests,
      "the gateway logged every burst request it handled",
      50,
      100,
    );
    const worst: Record<string, number> = {};
    for (const s of services) {
      const lines = burstLines(s);
      assert.ok(lines.length > 0, `${s} logged burst requests`);
      const overrun = lines.map((l) => Number(l["durationMs"]) - Number(l["deadlineMs"]));
      worst[s] = Math.round(Math.max(...overrun));
      assert.deepEqual(
        lines
          .filter((l) => !(Number(l["deadlineMs"]) <= timeoutMs) || l["deadlineSource"] !== "client")
          .map((l) => `${s} ${l["requestId"]}: ${l["deadlineMs"]} ms (${l["deadlineSource"]})`),
        [],
        `${s}: each request's deadline came from the client and is no longer than its ${timeoutMs} ms`,
      );
      assert.deepEqual(
        lines
          .filter((l) => Number(l["durationMs"]) > Number(l["deadlineMs"]) + hopGraceMs)
          .map((l) => `${s} ${l["procedure"]} ${l["requestId"]} ${l["code"]}: ${l["durationMs"]} ms of ${l["deadlineMs"]}`),
        [],
        `${s}: no request worked past its deadline`,
      );
    }
    console.log(
      `[default burst] log lines per hop ${JSON.stringify(Object.fromEntries(services.map((s) => [s, burstLines(s).length])))}; worst duration minus deadline (ms) ${JSON.stringify(worst)}`,
    );

    // Orders rows = successful responses: every order a caller was given is stored once, under its
    // customer, with the lines it was answered with; nothing was stored for anyone else.
    const rows = await p.sql<{ id: string; customer_id: string; total_minor: string; items: string }>(
      `SELECT o.id, o.customer_id, o.total_minor, count(i.order_id) AS items
         FROM orders.orders o LEFT JOIN orders.order_items i ON i.order_id = o.id
        WHERE o.customer_id LIKE $1 GROUP BY o.id`,
      [`burst-${run}-%`],
    );
    const byCustomer = new Map<string, typeof rows>();
    for (const r of rows) byCustomer.set(r.customer_id, [...(byCustomer.get(r.customer_id) ?? []), r]);
    assert.deepEqual(
      [...byCustomer].filter(([, rs]) => rs.length > 1).map(([c, rs]) => `${c}: ${rs.length} orders`),
      [],
      "no order stored twice",
    );
    for (const c of calls.filter((x) => x.code === "ok")) {
      assert.equal(byCustomer.get(c.customerId)?.[0]?.id, c.orderId, `${c.customerId}: the acknowledged order is the stored one`);
    }
    assert.deepEqual(
      rows.filter((r) => r.items !== "1").map((r) => r.id),
      [],
      "every stored order is whole",
    );

    // Recovery, with no help: a new order succeeds within a bounded number of attempts.
    let probe = 0;
    await eventually(
      async () =>
        (await placeOrder({ customerId: `after-${run}-${probe}`, key: `after-${run}-${probe}`, requestId: `after-${run}-${probe++}`, quantity: 1 }, 3000))
          .code === "ok",
      "orders succeed again once the fault is lifted",
      50,
      100,
    );
    // Each caller left uncertain asks again, as a careful client does: same key, same body. Every one
    // gets its order, stored already (replayed) or now, and the table ends with one row per caller.
    const acknowledged = calls.length - calls.filter((c) => c.code !== "ok").length;
    const uncertain = calls.filter((c) => c.code !== "ok");
    for (const c of uncertain) {
      for (let attempt = 0; attempt < 10 && c.code !== "ok"; attempt++) Object.assign(c, await placeOrder(c, 3000));
    }
    assert.deepEqual(
      calls.filter((c) => c.code !== "ok").map((c) => `${c.customerId}: ${codeName(c.code)} ${c.message}`),
      [],
      "every caller got its order after the fault",
    );
    const final = await p.sql<{ id: string; customer_id: string; total_minor: string }>(
      "SELECT id, customer_id, total_minor FROM orders.orders WHERE customer_id LIKE $1",
      [`burst-${run}-%`],
    );
    assert.equal(final.length, burstSize, "orders rows = successful responses: one per caller");
    const stored = new Map(final.map((r) => [r.customer_id, r]));
    for (const c of calls) {
      assert.equal(stored.get(c.customerId)?.id, c.orderId, `${c.customerId}: one order, the one it was given`);
      assert.equal(stored.get(c.customerId)?.total_minor, (unitPriceMinor * BigInt(c.quantity)).toString());
    }
    console.log(
      `[default burst] when the burst ended: ${acknowledged} acknowledged, ${rows.length} stored (the rest lost with a dropped answer or never written); ` +
        `${uncertain.length} uncertain callers asked again; ${d.replayed} replays by key during the burst`,
    );
  });
});
