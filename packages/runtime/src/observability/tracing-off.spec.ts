/**
 * A service that exports no spans (no OTEL endpoint: the default) does no
 * tracing work for a request that carries no trace, and still logs and
 * passes on the trace id of one that does. This file registers no tracer
 * provider (tracing-interceptor.spec.ts does, in its own process).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { propagation } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { currentScope } from "@platform/resilience";
import { deadlineInterceptor } from "../deadline/deadline-interceptor.js";
import { requestLogInterceptor } from "./request-log-interceptor.js";
import { tracingInterceptor } from "./tracing-interceptor.js";
import { clientSpanNeeded, serverSpanNeeded, traceFields } from "./tracing.js";
import { capturingLogger, inMemoryGet } from "../testing/in-memory-server.js";

propagation.setGlobalPropagator(new W3CTraceContextPropagator());
const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
const traceparent = `00-${traceId}-00f067aa0ba902b7-01`;

test("without an exporter a span is needed only for a request that carries a trace", () => {
  assert.equal(serverSpanNeeded(new Headers()), false);
  assert.equal(serverSpanNeeded(new Headers({ traceparent })), true);
  assert.equal(clientSpanNeeded(undefined), false);
});

test("a request without a trace gets no trace ids and no scope telemetry; one with a trace logs its id and passes it on", async () => {
  const { logger, lines } = capturingLogger();
  const deadline = { edge: true, defaultMs: 3000, maxMs: 30_000 };
  const seen: Array<{ fields: Record<string, string>; passesOn: boolean }> = [];
  const get = inMemoryGet(
    [
      requestLogInterceptor({ logger, deadline }),
      deadlineInterceptor({ deadline, logger, shutdownSignal: new AbortController().signal }),
      tracingInterceptor(),
    ],
    () => {
      const scope = currentScope();
      seen.push({ fields: traceFields(scope), passesOn: clientSpanNeeded(scope) });
      return {};
    },
  );
  await get({});
  await get({ headers: { traceparent } });
  assert.deepEqual(seen, [
    { fields: {}, passesOn: false },
    { fields: { trace_id: traceId }, passesOn: true },
  ]);
  const rpcLines = lines.filter((l) => l["msg"] === "rpc");
  assert.equal(rpcLines.length, 2);
  assert.equal(rpcLines[0]!["trace_id"], undefined);
  assert.equal(rpcLines[1]!["trace_id"], traceId);
});
