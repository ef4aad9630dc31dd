import type * as http from "node:http";
import type * as http2 from "node:http2";
import { Code } from "@connectrpc/connect";
import { codeLabel } from "../observability/code-label.js";
import { encodeGrpcMessage } from "./grpc-message.js";
import { writeHead } from "./http-endpoints.js";

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

/** HTTP status of a Connect unary error, per the Connect protocol. */
const connectStatus: Partial<Record<Code, number>> = {
  [Code.Canceled]: 499,
  [Code.InvalidArgument]: 400,
  [Code.Unauthenticated]: 401,
  [Code.DeadlineExceeded]: 504,
  [Code.ResourceExhausted]: 429,
  [Code.Unavailable]: 503,
  [Code.Internal]: 500,
};

/**
 * Answers an RPC with an error outside the Connect adapter, for the one case
 * Connect cannot: the request watchdog's DEADLINE_EXCEEDED for a body that
 * never arrives (request-watchdog.ts; connect-compat.ts item 3). Every other
 * refusal is thrown from the request gate and written by Connect. Written in
 * the caller's protocol: a gRPC or gRPC-Web "trailers-only" response, or a
 * Connect streaming end-of-stream message, or a Connect unary JSON error
 * with the matching HTTP status (504).
 */
export function writeRpcError(req: Req, res: Res, code: Code, message: string, headers: Record<string, string> = {}): void {
  const contentType = String(req.headers["content-type"] ?? "");
  if (contentType.startsWith("application/grpc")) {
    // Both gRPC and gRPC-Web accept the status in the headers of an
    // otherwise empty 200 response. On HTTP/2 that must be one HEADERS frame
    // that ends the stream (gRPC's "Trailers-Only"): grpc-js reads a status
    // only from such a frame or from trailers, and took headers followed by
    // an empty DATA frame for a call "ended without gRPC status". Node's
    // compatibility layer sends exactly that frame when the headers go out
    // with end() (not with an explicit writeHead()).
    const all: Record<string, string> = {
      "content-type": contentType.startsWith("application/grpc-web") ? "application/grpc-web+proto" : "application/grpc",
      "grpc-status": String(code),
      "grpc-message": encodeGrpcMessage(message),
      ...headers,
    };
    res.statusCode = 200;
    for (const [name, value] of Object.entries(all)) res.setHeader(name, value);
    res.end();
    return;
  }
  if (contentType.startsWith("application/connect+")) {
    // Connect streaming: HTTP 200 and one end-of-stream message (flag 0x02) carrying the error.
    const json = Buffer.from(JSON.stringify({ error: { code: codeLabel(code), message } }));
    const head = Buffer.alloc(5);
    head[0] = 0x02;
    head.writeUInt32BE(json.length, 1);
    writeHead(res, 200, { "content-type": contentType.split(";")[0]!, "content-length": head.length + json.length, ...headers });
    res.end(Buffer.concat([head, json]));
    return;
  }
  const body = JSON.stringify({ code: codeLabel(code), message });
  writeHead(res, connectStatus[code] ?? 500, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    ...headers,
  });
  res.end(body);
}
