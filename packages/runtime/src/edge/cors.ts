import type * as http from "node:http";
import type * as http2 from "node:http2";
import { cors as connectCors } from "@connectrpc/connect";
import type { EnvReader } from "../config/config.js";
import { writeHead } from "../server/http-endpoints.js";

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

export interface CorsConfig {
  /** Origins allowed to call the API from a browser (Connect, gRPC-Web); empty: none. */
  allowedOrigins: string[];
}

export function readCorsConfig(r: EnvReader): CorsConfig {
  const raw = r.optionalString("CORS_ALLOWED_ORIGINS");
  const allowedOrigins =
    raw === undefined
      ? []
      : raw
          .split(",")
          .map((o) => o.trim())
          .filter(Boolean);
  for (const o of allowedOrigins) {
    if (o !== "*" && !/^https?:\/\/[^/\s]+$/.test(o)) r.problems.push(`CORS_ALLOWED_ORIGINS: "${o}" is not an origin like https://app.example.com`);
  }
  return { allowedOrigins };
}

// Our own headers on top of Connect's lists: the idempotency key, the
// caller's request id and credentials go in; the request id, the
// pushback hint and which service failed (x-failed-dependency) come out.
const allowHeaders = [...connectCors.allowedHeaders, "Idempotency-Key", "X-Request-Id", "Authorization", "X-Api-Key"].join(", ");
const exposeHeaders = [...connectCors.exposedHeaders, "X-Request-Id", "Retry-After", "Grpc-Retry-Pushback-Ms", "X-Failed-Dependency"].join(", ");

/**
 * CORS for browser clients at the edge. Answers preflights itself (true:
 * the request was answered) and marks allowed responses; requests from
 * origins not on the list get no CORS headers, so browsers refuse them.
 */
export function handleCors(config: CorsConfig, req: Req, res: Res): boolean {
  const origin = req.headers["origin"];
  if (typeof origin !== "string" || config.allowedOrigins.length === 0) return false;
  const allowed = config.allowedOrigins.includes("*") || config.allowedOrigins.includes(origin);
  if (!allowed) return false;
  res.setHeader("access-control-allow-origin", origin);
  res.setHeader("vary", "Origin");
  if (req.method === "OPTIONS") {
    writeHead(res, 204, {
      "access-control-allow-methods": connectCors.allowedMethods.join(", "),
      "access-control-allow-headers": allowHeaders,
      "access-control-max-age": "7200",
    });
    res.end();
    return true;
  }
  res.setHeader("access-control-expose-headers", exposeHeaders);
  return false;
}
