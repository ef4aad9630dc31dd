import { randomFillSync } from "node:crypto";
import {
  ROOT_CONTEXT,
  SpanKind,
  context,
  isSpanContextValid,
  SpanStatusCode,
  TraceFlags,
  propagation,
  trace,
  type Context,
  type Span,
  type TextMapGetter,
  type TextMapSetter,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import type { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import type { Code } from "@connectrpc/connect";
import { codeLabel } from "./code-label.js";
import { scopeTelemetry, setScopeTelemetry, type CallScope } from "@platform/resilience";

const tracer = () => trace.getTracer("@platform/runtime");

/** Whether spans are recorded and exported (OTEL_EXPORTER_OTLP_ENDPOINT set). */
let exporting = false;

/**
 * OpenTelemetry tracing. Every request has a W3C trace context: the
 * caller's traceparent, or one started where it arrived without one; it
 * travels through every hop, beside the deadline, so traces from an outside
 * tracer stay connected and every log line names its trace. Spans are
 * exported over OTLP/HTTP only when OTEL_EXPORTER_OTLP_ENDPOINT is set;
 * otherwise no span is made (`requestTraceContext`). Returns a flush for
 * shutdown.
 *
 * The SDK and the exporter are loaded only when spans are exported: a
 * service that exports none does not spend its start-up on them (about a
 * fifth of the runtime's load time; a test run starts over a hundred
 * services).
 */
export async function initTracing(service: string, endpoint: string | undefined): Promise<() => Promise<void>> {
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  if (!endpoint) return async () => {};
  const [{ OTLPTraceExporter }, { resourceFromAttributes }, { BatchSpanProcessor, NodeTracerProvider }] = await Promise.all([
    import("@opentelemetry/exporter-trace-otlp-http"),
    import("@opentelemetry/resources"),
    import("@opentelemetry/sdk-trace-node"),
  ]);
  return registerTracerProvider(
    new NodeTracerProvider({
      resource: resourceFromAttributes({ "service.name": service }),
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: `${endpoint.replace(/\/+$/, "")}/v1/traces` }))],
    }),
  );
}

/**
 * Makes `provider` the process's tracer provider and turns on the active
 * server span. register() also installs OpenTelemetry's AsyncLocalStorage
 * context manager, which is what makes the server span active in handlers
 * (withServerSpanActive). initTracing uses it; so can a test or a service
 * that brings its own exporter.
 */
export function registerTracerProvider(provider: NodeTracerProvider): () => Promise<void> {
  provider.register();
  exporting = true;
  return () => provider.shutdown();
}

const getter: TextMapGetter<Headers> = {
  keys: (h) => [...h.keys()],
  get: (h, k) => h.get(k) ?? undefined,
};
const setter: TextMapSetter<Headers> = { set: (h, k, v) => h.set(k, v) };

/**
 * The span name and attributes of an RPC as the OpenTelemetry RPC
 * conventions (semconv 1.45) describe Connect: `rpc.system.name` is
 * "connectrpc", `rpc.method` and the span name are the fully-qualified
 * method ("checkout.v1.CheckoutService/PlaceOrder", no leading slash).
 */
export function rpcSpanName(service: string, method: string): string {
  return `${service}/${method}`;
}

/**
 * Whether a request gets a server span: only when spans are exported.
 * Otherwise the request's trace context is the one `requestTraceContext`
 * gave its call scope, and a span would record nothing (docs/performance.md).
 */
export function serverSpanNeeded(): boolean {
  return exporting;
}

/** A request's W3C trace context headers, as they arrived. */
export interface InboundTrace {
  traceparent: string | undefined;
  tracestate: string | undefined;
}

const inboundGetter: TextMapGetter<InboundTrace> = {
  keys: () => ["traceparent", "tracestate"],
  get: (h, k) => (k === "traceparent" ? h.traceparent : k === "tracestate" ? h.tracestate : undefined),
};

/**
 * The trace a request joins on a hop that exports no spans: the caller's
 * (a valid traceparent), or else a new one started here, at the edge for
 * every outside caller that sent none. Either way every line the request
 * logs carries its trace_id and every call it makes passes the trace on.
 * No span is made: the context holds a non-recording one. A new trace is
 * marked sampled, so that a hop below that exports spans still records its
 * part (a parent-based sampler follows the flag). With an exporter, the
 * tracing interceptor's server span takes its place (`startServerSpan`).
 */
export function requestTraceContext(inbound: InboundTrace): Context {
  if (inbound.traceparent !== undefined) {
    const sent = propagation.extract(ROOT_CONTEXT, inbound, inboundGetter);
    const ctx = trace.getSpanContext(sent);
    if (ctx && isSpanContextValid(ctx)) return sent;
  }
  const { traceId, spanId } = newTraceIds();
  return trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId, traceFlags: TraceFlags.SAMPLED });
}

/**
 * The trace id for the line of a request refused before it had a call
 * scope: the caller's, or a new one (the request ends here).
 */
export function refusedRequestTraceId(inbound: InboundTrace): string {
  return trace.getSpanContext(requestTraceContext(inbound))!.traceId;
}

/** Random bytes for 256 id pairs, refilled when used up: one randomFill per 256 new traces, not one per trace. */
const idBytes = Buffer.alloc(24 * 256);
let idOffset = idBytes.length;

/** A random W3C trace id (16 bytes) and span id (8 bytes), in lower-case hex, neither all zeros. */
export function newTraceIds(): { traceId: string; spanId: string } {
  for (;;) {
    if (idOffset === idBytes.length) {
      randomFillSync(idBytes);
      idOffset = 0;
    }
    const traceId = idBytes.toString("hex", idOffset, idOffset + 16);
    const spanId = idBytes.toString("hex", idOffset + 16, idOffset + 24);
    idOffset += 24;
    if (isSpanContextValid({ traceId, spanId, traceFlags: TraceFlags.NONE })) return { traceId, spanId };
  }
}

/** The same for an outgoing call: spans are exported, or the request has a trace to pass on. */
export function clientSpanNeeded(scope: CallScope | undefined): boolean {
  return exporting || (scope !== undefined && scopeTelemetry(scope) !== undefined);
}

/** The server span of an inbound request, parented on the caller's traceparent. */
export function startServerSpan(scope: CallScope, header: Headers, service: string, method: string, attributes: Record<string, string | number>): Span {
  const parent = propagation.extract(ROOT_CONTEXT, header, getter);
  const name = rpcSpanName(service, method);
  const span = tracer().startSpan(name, { kind: SpanKind.SERVER, attributes: { "rpc.system.name": "connectrpc", "rpc.method": name, ...attributes } }, parent);
  setScopeTelemetry(scope, trace.setSpan(parent, span));
  return span;
}

/**
 * Runs `fn` with the request's server span as OpenTelemetry's active span,
 * so a span a handler starts with the plain OpenTelemetry API nests under
 * it. Only when spans are exported: otherwise there is no context manager
 * to hold it and the call would only cost time.
 */
export function withServerSpanActive<T>(scope: CallScope, fn: () => T): T {
  const telemetry = exporting ? (scopeTelemetry(scope) as Context | undefined) : undefined;
  return telemetry ? context.with(telemetry, fn) : fn();
}

/** The client span of one attempt to a dependency; writes traceparent into the request. */
export function startClientSpan(
  scope: CallScope | undefined,
  service: string,
  method: string,
  header: Headers,
  attributes: Record<string, string | number>,
): Span {
  const parent = (scope && (scopeTelemetry(scope) as Context | undefined)) ?? ROOT_CONTEXT;
  const name = rpcSpanName(service, method);
  const span = tracer().startSpan(name, { kind: SpanKind.CLIENT, attributes: { "rpc.system.name": "connectrpc", "rpc.method": name, ...attributes } }, parent);
  propagation.inject(trace.setSpan(parent, span), header, setter);
  return span;
}

/**
 * Ends a span with the RPC's outcome: `rpc.response.status_code` is the
 * Connect code ("ok" on success), and a failure also sets `error.type`
 * and the span's error status.
 */
export function endSpan(span: Span, code: Code | "ok", message?: string): void {
  const label = codeLabel(code);
  span.setAttribute("rpc.response.status_code", label);
  if (code !== "ok") {
    span.setAttribute("error.type", label);
    span.setStatus({ code: SpanStatusCode.ERROR, ...(message ? { message } : {}) });
  }
  span.end();
}

/**
 * The fields that tie a log line to its trace, named as OpenTelemetry's
 * log data model names them in JSON (`trace_id`, `span_id`, `trace_flags`).
 * With a tracer provider registered they name this hop's server span.
 * Without one, a trace id the caller sent is still worth logging, but the
 * span id would be the caller's, so it is left out.
 */
export function traceFields(scope: CallScope | undefined): Record<string, string> {
  const telemetry = scope && (scopeTelemetry(scope) as Context | undefined);
  if (!telemetry) return {};
  const span = trace.getSpan(telemetry);
  const ctx = span?.spanContext();
  if (!ctx || !isSpanContextValid(ctx)) return {};
  // Not isRecording(): the request's log line is written after its span ended.
  if (!exporting) return { trace_id: ctx.traceId };
  return { trace_id: ctx.traceId, span_id: ctx.spanId, trace_flags: ctx.traceFlags.toString(16).padStart(2, "0") };
}
