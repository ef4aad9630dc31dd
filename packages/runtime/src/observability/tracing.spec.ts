// npm test: own process (it installs a tracer provider for the process, and tracing.ts then exports spans for every request: a spec sharing the process, tracing-off.spec.ts for one, would see tracing on)
/**
 * Tracing inside one process, with the real OpenTelemetry SDK and an
 * in-memory exporter: the server span is active in the handler (a span the
 * handler starts nests under it), spans follow the current RPC and database
 * conventions, and log lines written while handling a request name the
 * trace. The trace across processes is test/e2e/tracing.test.ts.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { trace } from "@opentelemetry/api";
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { pino } from "pino";
import { currentScope } from "@platform/resilience";
import { checkoutV1 } from "@platform/proto";
import { inOrder, serverInterceptors } from "../server/server-interceptors.js";
import { registerTracerProvider, traceFields } from "./tracing.js";

const exporter = new InMemorySpanExporter();
const shutdownTracing = registerTracerProvider(new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));

const lines: Record<string, unknown>[] = [];
const logger = pino(
  { mixin: () => traceFields(currentScope()) },
  new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split("\n")) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  }),
);

const transport = createRouterTransport(
  ({ service }) => {
    service(checkoutV1.CheckoutService, {
      async listProducts() {
        // What a user writes in a handler: the plain OpenTelemetry API, no platform import.
        const span = trace.getTracer("user-code").startSpan("load catalogue");
        logger.info("inside the handler");
        span.end();
        return { products: [] };
      },
      async getOrder() {
        throw new ConnectError("no such order", Code.NotFound);
      },
    });
  },
  {
    router: {
      interceptors: inOrder(
        serverInterceptors({
          deadline: { edge: true, defaultMs: 2000, maxMs: 10_000 },
          logger,
          shutdownSignal: new AbortController().signal,
        }),
      ),
    },
  },
);

test("a span started in a handler is a child of the server span; log lines name the trace", async () => {
  await createClient(checkoutV1.CheckoutService, transport).listProducts({}, { timeoutMs: 1500 });
  const spans = exporter.getFinishedSpans();
  const server = spans.find((s) => s.name === "checkout.v1.CheckoutService/ListProducts");
  const user = spans.find((s) => s.name === "load catalogue");
  assert.ok(server, `server span named without a leading slash: ${spans.map((s) => s.name).join(", ")}`);
  assert.ok(user, "the handler's own span was recorded");
  assert.equal(user.spanContext().traceId, server.spanContext().traceId, "same trace");
  assert.equal(user.parentSpanContext?.spanId, server.spanContext().spanId, "the handler's span nests under the server span");

  assert.equal(server.attributes["rpc.system.name"], "connectrpc");
  assert.equal(server.attributes["rpc.method"], "checkout.v1.CheckoutService/ListProducts");
  assert.equal(server.attributes["rpc.response.status_code"], "ok");
  assert.ok(Number(server.attributes["deadline.remaining_ms"]) > 0 && Number(server.attributes["deadline.remaining_ms"]) <= 1500);
  for (const old of ["rpc.system", "rpc.service"]) assert.equal(server.attributes[old], undefined, `no pre-1.38 attribute ${old}`);

  const inside = lines.find((l) => l["msg"] === "inside the handler");
  assert.equal(inside?.["trace_id"], server.spanContext().traceId, "a handler's log line carries the trace id");
  assert.equal(inside?.["span_id"], server.spanContext().spanId, "and the server span's id");
  const rpcLine = lines.find((l) => l["msg"] === "rpc");
  assert.equal(rpcLine?.["trace_id"], server.spanContext().traceId, "the request log line too");
});

test("a failed call records its code as rpc.response.status_code and error.type", async () => {
  exporter.reset();
  await assert.rejects(
    createClient(checkoutV1.CheckoutService, transport).getOrder({ orderId: "00000000-0000-4000-8000-000000000000" }, { timeoutMs: 1500 }),
    /no such order/,
  );
  const server = exporter.getFinishedSpans().find((s) => s.name === "checkout.v1.CheckoutService/GetOrder");
  assert.ok(server, "the failed call has a server span");
  assert.equal(server.attributes["rpc.response.status_code"], "not_found");
  assert.equal(server.attributes["error.type"], "not_found");
  assert.equal(server.status.code, 2, "span status ERROR");
});

test.after(() => shutdownTracing());
