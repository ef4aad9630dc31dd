import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  propagation,
  trace,
  type Context,
  type Span,
  type TextMapGetter,
  type TextMapSetter,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { Code } from "@connectrpc/connect";
import { scopeTelemetry, setScopeTelemetry, type CallScope } from "@platform/resilience";

const tracer = () => trace.getTracer("@platform/runtime");

/**
 * OpenTelemetry tracing. W3C trace context (traceparent) always travels
 * through every hop, beside the deadline, so traces from an outside tracer
 * stay connected. Spans are exported over OTLP/HTTP only when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set; otherwise the API is a no-op and
 * costs next to nothing. Returns a flush for shutdown.
 */
export function initTracing(service: string, endpoint: string | undefined): () => Promise<void> {
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  if (!endpoint) return async () => {};
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ "service.name": service }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: `${endpoint.replace(/\/+$/, "")}/v1/traces` }))],
  });
  provider.register();
  return () => provider.shutdown();
}

const getter: TextMapGetter<Headers> = {
  keys: (h) => [...h.keys()],
  get: (h, k) => h.get(k) ?? undefined,
};
const setter: TextMapSetter<Headers> = { set: (h, k, v) => h.set(k, v) };

/** The server span of an inbound request, parented on the caller's traceparent. */
export function startServerSpan(scope: CallScope, header: Headers, attributes: Record<string, string | number>): Span {
  const parent = propagation.extract(ROOT_CONTEXT, header, getter);
  const span = tracer().startSpan(scope.procedure, { kind: SpanKind.SERVER, attributes: { "rpc.system": "connect_rpc", ...attributes } }, parent);
  setScopeTelemetry(scope, trace.setSpan(parent, span));
  return span;
}

/** The client span of one attempt to a dependency; writes traceparent into the request. */
export function startClientSpan(scope: CallScope | undefined, procedure: string, header: Headers, attributes: Record<string, string | number>): Span {
  const parent = (scope && (scopeTelemetry(scope) as Context | undefined)) ?? ROOT_CONTEXT;
  const span = tracer().startSpan(procedure, { kind: SpanKind.CLIENT, attributes: { "rpc.system": "connect_rpc", ...attributes } }, parent);
  propagation.inject(trace.setSpan(parent, span), header, setter);
  return span;
}

/** Ends a span with the RPC's outcome. */
export function endSpan(span: Span, code: Code | "ok", message?: string): void {
  if (code !== "ok") {
    span.setAttribute("rpc.connect_rpc.error_code", Code[code] ?? String(code));
    span.setStatus({ code: SpanStatusCode.ERROR, ...(message ? { message } : {}) });
  }
  span.end();
}
