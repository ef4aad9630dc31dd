/**
 * The smallest OTLP/HTTP trace receiver: accepts what the services'
 * exporter sends (POST /v1/traces, JSON encoding, the exporter's default)
 * and keeps every span with its service name. Used by the tracing e2e test
 * and by the trace picture; a real deployment runs the OpenTelemetry
 * Collector (compose profile `tracing`).
 */
import { createServer } from "node:http";

export interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean };
}

export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** 1 internal, 2 server, 3 client. */
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes?: OtlpAttribute[];
  status?: { code?: number; message?: string };
}

export interface ReceivedSpan {
  service: string;
  span: OtlpSpan;
}

export interface OtlpReceiver {
  /** Base URL for OTEL_EXPORTER_OTLP_ENDPOINT. */
  readonly endpoint: string;
  readonly spans: ReceivedSpan[];
  /** Requests that were not OTLP JSON (answered 400). */
  readonly rejected: number;
  close(): Promise<void>;
}

interface ExportRequest {
  resourceSpans: { resource: { attributes: OtlpAttribute[] }; scopeSpans: { spans: OtlpSpan[] }[] }[];
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  let rejected = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (d: Buffer) => chunks.push(d));
    req.on("end", () => {
      let doc: ExportRequest;
      try {
        if (req.method !== "POST" || req.url !== "/v1/traces") throw new Error("not a trace export");
        doc = JSON.parse(Buffer.concat(chunks).toString("utf8")) as ExportRequest;
      } catch {
        rejected++;
        res.writeHead(400, { "content-type": "application/json" }).end("{}");
        return;
      }
      for (const rs of doc.resourceSpans) {
        const service = rs.resource.attributes.find((a) => a.key === "service.name")?.value.stringValue ?? "?";
        for (const ss of rs.scopeSpans) for (const span of ss.spans) spans.push({ service, span });
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    get rejected() {
      return rejected;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** An attribute's value as a string or number (OTLP JSON sends 64-bit ints as strings). */
export function spanAttribute(span: OtlpSpan, key: string): string | number | boolean | undefined {
  const v = span.attributes?.find((a) => a.key === key)?.value;
  if (!v) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  return v.doubleValue ?? v.boolValue;
}
