/**
 * Logs join into traces with no tracing exporter configured (the platform
 * as `npm start` runs it): every request has a W3C trace, the caller's or
 * one the hop starts when it sent none, and every line a request writes
 * carries its trace_id, at every hop. test/e2e/tracing.test.ts holds the
 * same with an exporter, where the ids are the exported spans'.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { eventually, logLines, startTestPlatform, type TestPlatform } from "@platform/test-support";

let p: TestPlatform;
before(async () => {
  p = await startTestPlatform({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: "" } });
});
after(async () => {
  await p?.close();
});

const hops = ["gateway", "checkout", "orders", "pricing"] as const;
const traceIdPattern = /^[0-9a-f]{32}$/;

/** Places one order with `headers`; returns every hop's lines for it (by its request id), once each hop logged its request. */
async function placeOrder(headers: Record<string, string>): Promise<Record<(typeof hops)[number], Record<string, unknown>[]>> {
  const requestId = randomUUID();
  await p
    .client("grpc")
    .placeOrder(
      { customerId: `trace-${requestId}`, items: [{ sku: "MUG-CERAMIC", quantity: 1 }] },
      { timeoutMs: 4000, headers: { "x-request-id": requestId, ...headers } },
    );
  const linesOf = (s: (typeof hops)[number]) => logLines(p, s).filter((l) => l["requestId"] === requestId);
  await eventually(() => hops.every((s) => linesOf(s).some((l) => l["msg"] === "rpc")), "every hop wrote the request's line", 50, 100);
  return Object.fromEntries(hops.map((s) => [s, linesOf(s)])) as Record<(typeof hops)[number], Record<string, unknown>[]>;
}

test("a request sent without a trace: the edge starts one, and every hop's lines carry its id", async () => {
  const first = await placeOrder({});
  const traceId = first.gateway.find((l) => l["msg"] === "rpc")?.["trace_id"];
  assert.match(String(traceId), traceIdPattern, "the edge's request line carries a new trace id");
  for (const s of hops) {
    for (const line of first[s]) assert.equal(line["trace_id"], traceId, `${s}: "${line["msg"]}" carries the request's trace id`);
  }

  const second = await placeOrder({});
  const other = second.gateway.find((l) => l["msg"] === "rpc")?.["trace_id"];
  assert.match(String(other), traceIdPattern);
  assert.notEqual(other, traceId, "each request starts its own trace");
});

test("a request sent with a trace keeps it at every hop", async () => {
  const traceId = randomUUID().replace(/-/g, "");
  const lines = await placeOrder({ traceparent: `00-${traceId}-${"b".repeat(16)}-01` });
  for (const s of hops) {
    const rpc = lines[s].filter((l) => l["msg"] === "rpc");
    assert.equal(rpc.length, 1, `${s} logged the request once`);
    for (const line of lines[s]) assert.equal(line["trace_id"], traceId, `${s}: "${line["msg"]}" carries the caller's trace id`);
    assert.equal(rpc[0]!["span_id"], undefined, "no span id: no span was made");
  }
});

test("a request refused before its handler is logged with a trace id too", async () => {
  const requestId = randomUUID();
  const res = await fetch(`${p.gatewayUrl}/checkout.v1.CheckoutService/ListProducts`, {
    method: "POST",
    headers: { "content-type": "application/json", "connect-protocol-version": "1", "connect-timeout-ms": "soon", "x-request-id": requestId },
    body: "{}",
  });
  assert.equal(res.status, 400, "a timeout header that is not one is refused");
  await res.text();
  const refusal = () => logLines(p, "gateway").find((l) => l["requestId"] === requestId);
  await eventually(() => refusal() !== undefined, "the gateway logged the refusal", 50, 100);
  const line = refusal()!;
  assert.equal(line["msg"], "rpc refused before the handler");
  assert.match(String(line["trace_id"]), traceIdPattern);
});

test("every request line every service wrote carries a trace id (the worker's calls, health checks and all)", async () => {
  const services = Object.keys(p.services) as (keyof typeof p.services)[];
  for (const s of services) {
    const lines = logLines(p, s).filter((l) => typeof l["msg"] === "string" && (l["msg"] as string).startsWith("rpc"));
    for (const line of lines) assert.match(String(line["trace_id"]), traceIdPattern, `${s}: ${JSON.stringify(line)}`);
  }
});
