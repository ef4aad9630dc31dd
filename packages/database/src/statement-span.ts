import { ProxyTracerProvider, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span } from "@opentelemetry/api";
import { type CallScope, scopeTelemetry } from "@platform/resilience";
import type { StatementOutcome } from "./metrics.js";

/**
 * Where a database lives, as the OpenTelemetry database conventions
 * (stable since semconv 1.26) name it: `db.namespace` is the database
 * name, `server.address`/`server.port` the server.
 */
export interface StatementTarget {
  namespace: string;
  serverAddress?: string;
  serverPort?: number;
}

/** Reads the target from a `postgres://` connection string; falls back to the dependency name. */
export function statementTarget(connectionString: string, fallbackNamespace: string): StatementTarget {
  try {
    const url = new URL(connectionString);
    const namespace = decodeURIComponent(url.pathname.replace(/^\//, "")) || fallbackNamespace;
    return {
      namespace,
      ...(url.hostname ? { serverAddress: url.hostname.replace(/^\[|\]$/g, "") } : {}),
      ...(url.port ? { serverPort: Number(url.port) } : {}),
    };
  } catch {
    // A key=value connection string: keep the span, without a server.
    return { namespace: fallbackNamespace };
  }
}

/** What the global tracer provider delegates to when none was registered. */
const noTracerProvider = new ProxyTracerProvider().getDelegate();

/**
 * Whether a tracer provider is registered (the service exports spans). A
 * statement span has no child and is passed to no one, so without one it
 * would be a non-recording span that records nothing: it is not made
 * (docs/performance.md).
 */
function spansRecorded(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== noTracerProvider;
}

/**
 * A span per statement, parented on the request's server span (a no-op
 * unless tracing is on). The text is the parameterised statement, so
 * values never appear in traces. The span is named `<operation> <namespace>`
 * as the conventions ask when no query summary is available, and carries the
 * deadline left when the statement started: the number that explains a
 * cancelled statement.
 */
export function startStatementSpan(scope: CallScope, dependency: string, target: StatementTarget, text: string, remainingMs: number): Span | undefined {
  if (!spansRecorded()) return undefined;
  const parent = (scopeTelemetry(scope) as Context | undefined) ?? ROOT_CONTEXT;
  const operation = text.trim().split(/\s+/, 1)[0]?.toUpperCase() || "QUERY";
  return trace.getTracer("@platform/database").startSpan(
    `${operation} ${target.namespace}`,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        "db.system.name": "postgresql",
        "db.namespace": target.namespace,
        "db.operation.name": operation,
        "db.query.text": text.slice(0, 2000),
        ...(target.serverAddress ? { "server.address": target.serverAddress } : {}),
        ...(target.serverPort ? { "server.port": target.serverPort } : {}),
        "peer.service": dependency,
        "deadline.remaining_ms": Math.floor(remainingMs),
      },
    },
    parent,
  );
}

/** Ends a statement span with its outcome; a failed statement records its SQLSTATE. */
export function endStatementSpan(span: Span | undefined, outcome: StatementOutcome, error: unknown): void {
  if (!span) return;
  if (outcome !== "ok") {
    const sqlState = (error as { code?: unknown } | undefined)?.code;
    if (typeof sqlState === "string" && /^[0-9A-Z]{5}$/.test(sqlState)) span.setAttribute("db.response.status_code", sqlState);
    span.setAttribute("error.type", typeof sqlState === "string" && sqlState ? sqlState : outcome);
    span.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
  }
  span.setAttribute("db.outcome", outcome);
  span.end();
}
