// npm test: own process (it installs a tracer provider for the process; OpenTelemetry takes the first one installed, and another spec may have installed its own)
/** The server span of a request: named after the RPC, with the deadline it was given, and the status of what the caller got. */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { SpanStatusCode } from "@opentelemetry/api";
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { Code, ConnectError } from "@connectrpc/connect";
import { deadlineInterceptor } from "../deadline/deadline-interceptor.js";
import { tracingInterceptor } from "./tracing-interceptor.js";
import { registerTracerProvider } from "./tracing.js";
import { capturingLogger, inMemoryGet } from "../testing/in-memory-server.js";

const exporter = new InMemorySpanExporter();
const shutdownTracing = registerTracerProvider(new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
after(() => shutdownTracing());

const { logger } = capturingLogger();
const scoped = deadlineInterceptor({ deadline: { edge: true, defaultMs: 3000, maxMs: 30_000 }, logger, shutdownSignal: new AbortController().signal });

test("one server span per request, with the deadline it was given and the outcome", async () => {
  exporter.reset();
  let fail = false;
  const get = inMemoryGet([scoped, tracingInterceptor()], () => {
    if (fail) throw new ConnectError("no such order", Code.NotFound);
    return {};
  });
  await get({ headers: { "x-request-id": "traced" }, timeoutMs: 2000 });
  fail = true;
  await assert.rejects(get());
  const spans = exporter.getFinishedSpans();
  assert.equal(spans.length, 2);
  assert.equal(spans[0]!.name, "test.v1.Counter/Get");
  assert.equal(spans[0]!.attributes["request.id"], "traced");
  assert.equal(spans[0]!.attributes["deadline.source"], "client");
  assert.ok(Number(spans[0]!.attributes["deadline.timeout_ms"]) <= 2000);
  assert.equal(spans[1]!.attributes["deadline.source"], "default");
  assert.equal(spans[0]!.status.code, SpanStatusCode.UNSET);
  assert.deepEqual(
    [spans[1]!.status.code, spans[1]!.status.message, spans[1]!.attributes["rpc.response.status_code"]],
    [SpanStatusCode.ERROR, "no such order", "not_found"],
  );
});

test("no call scope, no span: the interceptor runs only inside the deadline interceptor", async () => {
  exporter.reset();
  await inMemoryGet([tracingInterceptor()], () => ({}))();
  assert.equal(exporter.getFinishedSpans().length, 0);
});

test("an inner hop's span names the caller and tenant the edge sent", async () => {
  exporter.reset();
  const get = inMemoryGet([scoped, tracingInterceptor()], () => ({}));
  await get({ headers: { "x-caller-id": "alice", "x-tenant-id": "acme" } });
  await get();
  const [named, anonymous] = exporter.getFinishedSpans();
  assert.deepEqual([named!.attributes["enduser.id"], named!.attributes["platform.tenant"]], ["alice", "acme"]);
  assert.deepEqual([anonymous!.attributes["enduser.id"], anonymous!.attributes["platform.tenant"]], [undefined, undefined]);
});
