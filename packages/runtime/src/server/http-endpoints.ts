import type * as http from "node:http";
import type * as http2 from "node:http2";
import { register } from "../observability/metrics.js";
import type { HealthState } from "./health.js";

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

/** A plain HTTP endpoint answered before the Connect adapter. */
export type HttpEndpoint = (req: Req, res: Res, body: () => Promise<string>) => void | Promise<void>;

/**
 * `res.writeHead` for either kind of response: the two overload sets do not
 * unify into a callable union (@types/node 22 and later), so narrow first.
 */
export function writeHead(res: Res, status: number, headers: http.OutgoingHttpHeaders & http2.OutgoingHttpHeaders): void {
  if ("stream" in res) res.writeHead(status, headers);
  else res.writeHead(status, headers);
}

export function sendJson(res: Res, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  writeHead(res, status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

export function sendText(res: Res, status: number, text: string, contentType = "text/plain; charset=utf-8"): void {
  writeHead(res, status, { "content-type": contentType, "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** Liveness and readiness for compose and Kubernetes HTTP probes. */
export function probeEndpoints(health: HealthState): Record<string, HttpEndpoint> {
  return {
    "GET /healthz": (_req, res) => sendText(res, 200, "ok\n"),
    "GET /readyz": (_req, res) => (health.ready ? sendText(res, 200, "ready\n") : sendText(res, 503, "not ready\n")),
  };
}

export function metricsEndpoint(): Record<string, HttpEndpoint> {
  return {
    "GET /metrics": async (_req, res) => sendText(res, 200, await register.metrics(), register.contentType),
  };
}

/** Reads a small request body (admin endpoints only), refusing anything over `limit` bytes. */
export function readBody(req: Req, limit = 64 * 1024): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        reject(new Error(`body larger than ${limit} bytes`));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

/**
 * Routes "METHOD /path" to an endpoint; returns false when nothing matches so
 * the caller can hand the request on (to the Connect adapter).
 */
export function dispatchEndpoint(endpoints: Record<string, HttpEndpoint>, req: Req, res: Res): boolean {
  const path = (req.url ?? "/").split("?")[0];
  const endpoint = endpoints[`${req.method} ${path}`];
  if (!endpoint) return false;
  Promise.resolve(endpoint(req, res, () => readBody(req))).catch((e: unknown) => {
    if (!res.headersSent) sendJson(res, 400, { error: e instanceof Error ? e.message : String(e) });
    else res.end();
  });
  return true;
}
