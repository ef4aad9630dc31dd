/**
 * A service that exports no spans (no OTEL endpoint: the default) makes no
 * spans, and still gives every request a trace: the caller's, or a new one
 * when it sent none (or one that is not valid). Its id is on the request's
 * log line and in its call scope (which the logger's mixin reads for every
 * line written inside it), and goes on to the dependencies in traceparent. This file registers no tracer provider
 * (tracing-interceptor.spec.ts does, in its own process).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { propagation } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { currentScope } from "@platform/resilience";
import { deadlineInterceptor } from "../deadline/deadline-interceptor.js";
import { requestLogInterceptor } from "./request-log-interceptor.js";
import { tracingInterceptor } from "./tracing-interceptor.js";
import { clientSpanNeeded, newTraceIds, serverSpanNeeded, startClientSpan, traceFields } from "./tracing.js";
import { capturingLogger, inMemoryGet } from "../testing/in-memory-server.js";

propagation.setGlobalPropagator(new W3CTraceContextPropagator());
const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
const traceparent = `00-${traceId}-00f067aa0ba902b7-01`;

test("without an exporter no server span is made", () => {
  assert.equal(serverSpanNeeded(), false);
  assert.equal(clientSpanNeeded(undefined), false);
});

test("every request has a trace: the caller's, or a new one; its id is on the request's lines and passed on", async () => {
  const { logger, lines } = capturingLogger();
  const deadline = { edge: true, defaultMs: 3000, maxMs: 30_000 };
  const seen: Array<{ fields: Record<string, string>; passesOn: boolean; sent: string | null }> = [];
  const get = inMemoryGet(
    [
      requestLogInterceptor({ logger, deadline }),
      deadlineInterceptor({ deadline, logger, shutdownSignal: new AbortController().signal }),
      tracingInterceptor(),
    ],
    () => {
      const scope = currentScope();
      // What a dependency call of this request sends.
      const header = new Headers();
      startClientSpan(scope, "dep.v1.Dep", "Get", header, {}).end();
      seen.push({ fields: traceFields(scope), passesOn: clientSpanNeeded(scope), sent: header.get("traceparent") });
      return {};
    },
  );
  await get({});
  await get({});
  await get({ headers: { traceparent } });
  await get({ headers: { traceparent: "00-00000000000000000000000000000000-00f067aa0ba902b7-01" } });

  const ids = seen.map((s) => s.fields["trace_id"]);
  for (const id of ids) assert.match(id ?? "", /^[0-9a-f]{32}$/);
  assert.equal(ids[2], traceId, "a caller's trace is joined");
  assert.equal(new Set(ids).size, 4, "a request without a (valid) trace gets a new one of its own");
  for (const [i, s] of seen.entries()) {
    assert.equal(s.passesOn, true);
    assert.match(s.sent ?? "", new RegExp(`^00-${ids[i]}-[0-9a-f]{16}-01$`), "the trace goes on to the dependency, sampled");
    assert.deepEqual(Object.keys(s.fields), ["trace_id"], "no span id: this hop made no span");
  }
  assert.deepEqual(
    lines.filter((l) => l["msg"] === "rpc").map((l) => l["trace_id"]),
    ids,
    "each request log line carries its request's trace id",
  );
});

test("new trace ids are W3C's: 32 and 16 lower-case hex digits, random, none repeated across refills of their random bytes", () => {
  const ids = Array.from({ length: 1000 }, () => newTraceIds());
  for (const { traceId, spanId } of ids) {
    assert.match(traceId, /^[0-9a-f]{32}$/);
    assert.match(spanId, /^[0-9a-f]{16}$/);
  }
  assert.equal(new Set(ids.map((i) => i.traceId)).size, ids.length);
  assert.equal(new Set(ids.map((i) => i.spanId)).size, ids.length);
});
