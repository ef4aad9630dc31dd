/**
 * OpenTelemetry: one trace across every hop, W3C trace context beside the
 * deadline, spans per RPC and per SQL statement with the remaining deadline
 * and the attempt number. The services export real OTLP/HTTP (JSON) to a
 * small receiver this test runs on loopback.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { type OtlpReceiver, spanAttribute, startOtlpReceiver } from "../../lab/trace/otlp-receiver.js";
import { eventually, logLines, startTestPlatform, type TestPlatform } from "@platform/test-support";

let receiver: OtlpReceiver;
let p: TestPlatform;

before(async () => {
  receiver = await startOtlpReceiver();
  p = await startTestPlatform({ env: { LOG_LEVEL: "info", OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: "100" } });
});
after(async () => {
  await p?.close();
  await receiver?.close();
});

const attr = spanAttribute;

test("one PlaceOrder is one connected trace: four services, their calls and their SQL, with the deadline on every span", async () => {
  const traceId = randomUUID().replace(/-/g, "");
  const clientSpanId = "a".repeat(16);
  const traceparent = `00-${traceId}-${clientSpanId}-01`;
  await p.client("grpc").placeOrder({ customerId: "traced", items: [{ sku: "MUG-CERAMIC", quantity: 1 }] }, { timeoutMs: 4000, headers: { traceparent } });
  const services = ["gateway", "checkout", "orders", "pricing"] as const;
  await eventually(
    () =>
      services.every((s) => receiver.spans.some((r) => r.span.traceId === traceId && r.service === s && r.span.kind === 2)) &&
      ["orders", "pricing"].every((s) =>
        receiver.spans.some((r) => r.span.traceId === traceId && r.service === s && attr(r.span, "db.system.name") === "postgresql"),
      ),
    "every service's server span and both databases' statements arrived",
    100,
    100,
  );
  // No more spans to wait for: in each process every client and statement
  // span ends before its server span, and a batch exporter sends spans in
  // the order they ended, so a service's server span arrives last.
  const spans = receiver.spans.filter((r) => r.span.traceId === traceId);
  const byId = new Map(spans.map((r) => [r.span.spanId, r]));

  // Connected: every span's parent is in the trace, except the edge's
  // server span, whose parent is the span the client sent.
  for (const r of spans) {
    if (r.span.parentSpanId === clientSpanId) continue;
    assert.ok(r.span.parentSpanId && byId.has(r.span.parentSpanId), `${r.service} ${r.span.name}: parent ${r.span.parentSpanId} is in the trace`);
  }
  const roots = spans.filter((r) => r.span.parentSpanId === clientSpanId);
  assert.deepEqual(
    roots.map((r) => `${r.service} ${r.span.name}`),
    ["gateway checkout.v1.CheckoutService/PlaceOrder"],
    "exactly one span continues the client's trace: the gateway's server span",
  );

  const server = (service: string) => spans.find((r) => r.service === service && r.span.kind === 2)!;
  for (const s of services) {
    const span = server(s).span;
    assert.ok(!span.name.startsWith("/"), `${s}: span name ${span.name} has no leading slash`);
    assert.equal(attr(span, "rpc.system.name"), "connectrpc");
    assert.equal(attr(span, "rpc.method"), span.name);
    assert.equal(attr(span, "rpc.response.status_code"), "ok");
  }
  // Each inner server span is the child of its caller's client span.
  for (const [caller, callee] of [
    ["gateway", "checkout"],
    ["checkout", "orders"],
    ["orders", "pricing"],
  ] as const) {
    const client = byId.get(server(callee).span.parentSpanId!);
    assert.equal(client?.service, caller, `${callee}'s parent is a span of ${caller}`);
    assert.equal(client!.span.kind, 3, `${callee}'s parent is a client span`);
    assert.equal(attr(client!.span, "retry.attempt"), 1);
    assert.equal(attr(client!.span, "peer.service"), callee);
    assert.equal(attr(client!.span, "server.address"), "127.0.0.1");
  }
  // SQL: every statement span sits under its own service's server span
  // and follows the database conventions.
  for (const db of ["orders", "pricing"] as const) {
    const sql = spans.filter((r) => r.service === db && attr(r.span, "db.system.name") === "postgresql");
    assert.ok(sql.length >= 1, `${db} recorded its statements`);
    for (const r of sql) {
      assert.equal(r.span.parentSpanId, server(db).span.spanId, `${db}: ${r.span.name} nests under ${db}'s server span`);
      assert.ok(String(attr(r.span, "db.query.text")).length > 0, "the parameterised statement is recorded");
      assert.ok(attr(r.span, "db.namespace"), "db.namespace");
      assert.equal(r.span.name, `${attr(r.span, "db.operation.name")} ${attr(r.span, "db.namespace")}`);
      for (const old of ["db.statement", "db.name", "db.system"]) assert.equal(attr(r.span, old), undefined, `no pre-1.26 attribute ${old}`);
    }
  }
  // The deadline on every span, shrinking from the edge inward.
  for (const r of spans) assert.ok(Number(attr(r.span, "deadline.remaining_ms")) > 0, `${r.service} ${r.span.name} carries the deadline left`);
  const remaining = services.map((s) => Number(attr(server(s).span, "deadline.remaining_ms")));
  for (let i = 1; i < remaining.length; i++) assert.ok(remaining[i]! < remaining[i - 1]!, `the deadline shrinks hop by hop: ${remaining.join(" > ")}`);

  assert.equal(receiver.rejected, 0, "every export was OTLP JSON");

  // Logs and traces join: each hop's request log line names its server span.
  await eventually(() => services.every((s) => logLines(p, s).some((l) => l["trace_id"] === traceId)), "every hop logged the request", 50, 100);
  for (const s of services) {
    const line = logLines(p, s).find((l) => l["trace_id"] === traceId && l["msg"] === "rpc");
    assert.equal(line?.["span_id"], server(s).span.spanId, `${s}'s request log line carries its server span's id`);
  }
});

test("a request sent without a trace: the edge's server span starts one, and every hop's request line names its server span in it", async () => {
  const requestId = randomUUID();
  await p
    .client("grpc")
    .placeOrder({ customerId: "untraced", items: [{ sku: "MUG-CERAMIC", quantity: 1 }] }, { timeoutMs: 4000, headers: { "x-request-id": requestId } });
  const services = ["gateway", "checkout", "orders", "pricing"] as const;
  const rpcLine = (s: string) => logLines(p, s as (typeof services)[number]).find((l) => l["requestId"] === requestId && l["msg"] === "rpc");
  await eventually(() => services.every((s) => rpcLine(s) !== undefined), "every hop logged the request", 50, 100);
  const traceId = String(rpcLine("gateway")!["trace_id"]);
  assert.match(traceId, /^[0-9a-f]{32}$/);
  await eventually(
    () => services.every((s) => receiver.spans.some((r) => r.span.traceId === traceId && r.service === s && r.span.kind === 2)),
    "every hop's server span of that trace arrived",
    100,
    100,
  );
  for (const s of services) {
    const server = receiver.spans.find((r) => r.span.traceId === traceId && r.service === s && r.span.kind === 2)!;
    assert.equal(rpcLine(s)!["trace_id"], traceId, `${s}'s request line is in the edge's trace`);
    assert.equal(rpcLine(s)!["span_id"], server.span.spanId, `${s}'s request line names its server span`);
  }
  const edge = receiver.spans.find((r) => r.span.traceId === traceId && r.service === "gateway" && r.span.kind === 2)!;
  assert.equal(edge.span.parentSpanId || undefined, undefined, "the edge's server span is the trace's root");
});
