/**
 * OpenTelemetry: one trace across every hop, W3C trace context beside the
 * deadline, spans per RPC and per SQL statement with the remaining deadline
 * and the attempt number. The services export real OTLP/HTTP (JSON) to a
 * small collector endpoint this test runs on loopback.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { randomUUID } from "node:crypto";
import { eventually, startTestPlatform, type TestPlatform } from "../support/platform.js";

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: { stringValue?: string; intValue?: string | number } }[];
}
interface Received {
  service: string;
  span: OtlpSpan;
}

const received: Received[] = [];
let collector: Server;
let p: TestPlatform;

before(async () => {
  collector = createServer((req, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      try {
        const doc = JSON.parse(body) as {
          resourceSpans: { resource: { attributes: { key: string; value: { stringValue?: string } }[] }; scopeSpans: { spans: OtlpSpan[] }[] }[];
        };
        for (const rs of doc.resourceSpans) {
          const service = rs.resource.attributes.find((a) => a.key === "service.name")?.value.stringValue ?? "?";
          for (const ss of rs.scopeSpans) for (const span of ss.spans) received.push({ service, span });
        }
      } catch {
        // not JSON: ignore
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end("{}");
    });
  });
  await new Promise<void>((r) => collector.listen(0, "127.0.0.1", r));
  const port = (collector.address() as { port: number }).port;
  p = await startTestPlatform({ env: { LOG_LEVEL: "warn", OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_BSP_SCHEDULE_DELAY: "100" } });
});
after(async () => {
  await p?.close();
  collector?.close();
});

const attr = (s: OtlpSpan, key: string) => {
  const v = s.attributes?.find((a) => a.key === key)?.value;
  return v?.stringValue ?? (v?.intValue !== undefined ? Number(v.intValue) : undefined);
};

test("one trace from the gateway to the SQL statement, with the deadline at every hop", async () => {
  const traceId = randomUUID().replace(/-/g, "");
  const traceparent = `00-${traceId}-${"a".repeat(16)}-01`;
  await p.client("grpc").placeOrder({ customerId: "traced", items: [{ sku: "MUG-CERAMIC", quantity: 1 }] }, { timeoutMs: 4000, headers: { traceparent } });
  await eventually(
    () => ["gateway", "checkout", "orders", "pricing"].every((s) => received.some((r) => r.span.traceId === traceId && r.service === s && r.span.kind === 2)),
    "every service's server span arrived",
    100,
    100,
  );
  const spans = received.filter((r) => r.span.traceId === traceId);
  const server = (service: string) => spans.find((r) => r.service === service && r.span.kind === 2);
  for (const s of ["gateway", "checkout", "orders", "pricing"]) assert.ok(server(s), `${s} has a server span in the caller's trace`);
  assert.equal(server("gateway")!.span.parentSpanId, "a".repeat(16), "the edge continues the client's trace");
  // Each inner server span is the child of its caller's client span.
  for (const [caller, callee] of [["gateway", "checkout"], ["checkout", "orders"], ["orders", "pricing"]] as const) {
    const client = spans.find((r) => r.service === caller && r.span.kind === 3 && r.span.spanId === server(callee)!.span.parentSpanId);
    assert.ok(client, `${callee}'s parent is a client span of ${caller}`);
    assert.equal(attr(client.span, "retry.attempt"), 1);
    assert.equal(attr(client.span, "peer.service"), callee);
  }
  const remaining = ["gateway", "checkout", "orders"].map((s) => Number(attr(spans.find((r) => r.service === s && r.span.kind === 3)!.span, "deadline.remaining_ms")));
  assert.ok(remaining[0]! > remaining[1]! && remaining[1]! > remaining[2]!, `the deadline shrinks hop by hop: ${remaining.join(" > ")}`);
  const sql = spans.filter((r) => r.span.name.startsWith("pricing-db") || r.span.name.startsWith("orders-db"));
  assert.ok(sql.length >= 2, "statement spans from both databases");
  for (const s of sql) assert.ok(Number(attr(s.span, "deadline.remaining_ms")) > 0);
});
