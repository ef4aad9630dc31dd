import type * as http from "node:http";
import * as http2 from "node:http2";
import { Code } from "@connectrpc/connect";
import { writeRpcError } from "./error-response.js";

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

/**
 * The deadline also bounds what happens around the handler, where the
 * server interceptors cannot see. Without this, an admitted request could
 * hold its admission slot and its stream until the connection dies (on
 * HTTP/2: forever):
 *
 * - connect-node reads a request body without looking at the clock, so a
 *   client that sends its headers and then stalls (slowloris) is never
 *   answered: at its deadline it gets DEADLINE_EXCEEDED (on HTTP/1.1 once
 *   the body's rest has arrived, or `graceMs` later on a closed connection);
 * - an answer the Connect adapter never finishes writing (unpatched,
 *   connect-es up to 2.3.0 never answers a gRPC error whose message holds a
 *   lone UTF-16 surrogate; patches/README.md) gets DEADLINE_EXCEEDED `graceMs`
 *   after the deadline, once the handler's own deadline answer had its chance;
 * (Why this stays beside Connect's requestGate, and when it can go:
 * connect-compat.ts, items 3 and 4.)
 *
 * - an HTTP/2 stream answered while the client is still sending (an
 *   oversized body refused early, a stalled upload answered above) is
 *   reset once the answer is out, so the client stops and the stream ends;
 * - on HTTP/1.1, after an answer given before a half-read body was read
 *   to its end (gRPC-Web past readMaxBytes: connect-node stops reading),
 *   the rest is discarded, or the connection is closed when the adapter
 *   destroyed the request: the keep-alive connection was wedged or reset,
 *   and the client's next request on it was never answered.
 */
export function watchRequest(req: Req, res: Res, deadline: AbortSignal | number, graceMs = 1000): void {
  const stream = "stream" in res ? res.stream : undefined;
  endUnreadBody(req, res);

  let timer: NodeJS.Timeout | undefined;
  // Only this closure and the close listener's are made per request; the rest runs once the deadline passed.
  const atDeadline = () => {
    if (!res.writableEnded && !req.complete) expire(req, res, stream, graceMs, "deadline exceeded before the request body arrived");
    const answeredBefore = res.writableEnded;
    timer = setTimeout(() => {
      if (!res.writableEnded) expire(req, res, stream, graceMs, "deadline exceeded: the answer could not be written");
      // Answered a while ago and still open: nothing more will come of it.
      else if (answeredBefore && stream && !stream.destroyed) stream.close(http2.constants.NGHTTP2_CANCEL);
    }, graceMs);
  };
  // The request's own deadline signal (request-context.ts) when there is
  // one: no second timer for the same deadline; the grace timer is armed
  // only once the deadline has passed.
  if (typeof deadline === "number") timer = setTimeout(atDeadline, Math.max(0, deadline));
  else if (deadline.aborted) atDeadline();
  else deadline.addEventListener("abort", atDeadline, { once: true });
  // One listener for both cleanups (a listener less per request).
  res.once("close", () => {
    if (typeof deadline !== "number") deadline.removeEventListener("abort", atDeadline);
    clearTimeout(timer);
  });
}

/** Answers DEADLINE_EXCEEDED, or cuts the stream or connection when it is too late for a status. */
function expire(req: Req, res: Res, stream: http2.ServerHttp2Stream | undefined, graceMs: number, message: string): void {
  if (res.headersSent) {
    // Too late for a status: cut the stream (or connection) instead of leaving it open.
    if (stream) stream.close(http2.constants.NGHTTP2_CANCEL);
    else req.socket.destroy();
    return;
  }
  if (!stream && !req.complete && !req.destroyed) {
    // HTTP/1.1 with the body still on its way (a deadline shorter than the
    // upload, 1 ms say): an answer now would close the connection with the
    // body's rest unread, which resets it under the client's upload, and
    // the client reports its failed write ("write EPIPE", INTERNAL) instead
    // of this answer. Read and discard the rest; answer once it has
    // arrived, on a connection that stays usable, or after graceMs (a
    // client that stalls, slowloris) and close it.
    req.resume();
    const answer = (close: boolean) => {
      clearTimeout(stalled);
      if (!res.headersSent && !res.writableEnded) writeRpcError(req, res, Code.DeadlineExceeded, message, close ? { connection: "close" } : {});
    };
    const stalled = setTimeout(() => answer(true), graceMs);
    req.once("end", () => answer(false));
    res.once("close", () => clearTimeout(stalled));
    return;
  }
  // On HTTP/1.1 the unread rest of a body makes the connection unusable.
  writeRpcError(req, res, Code.DeadlineExceeded, message, stream ? {} : { connection: "close" });
}

/**
 * The last two points above, for any request (health checks too, which are
 * not admitted and have no deadline here): when the answer goes out before
 * the request body was read to its end, the client must stop sending.
 */
export function endUnreadBody(req: Req, res: Res): void {
  const stream = "stream" in res ? res.stream : undefined;
  // Node's compatibility layer ends every HTTP/2 answer with trailers, sent
  // from its own (earlier) 'wantTrailers' listener: after that, the whole
  // answer is queued ahead of a reset. RFC 9113 section 8.1 suggests NO_ERROR,
  // but node 20 keeps that RST_STREAM pending until the upload ends, i.e. never.
  // A request read to its end (every unary call Connect answers normally) had its stream's
  // remote side closed already: the check below could only find it closed, so it is not
  // scheduled (a setImmediate and a stream-state read less per request).
  stream?.once("wantTrailers", () => {
    if (req.readableEnded) return;
    setImmediate(() => {
      if (!stream.destroyed && stream.state.remoteClose === 0) stream.close(http2.constants.NGHTTP2_CANCEL);
    });
  });

  if (!stream) {
    // An answer that starts after the adapter gave up on a body half read
    // (gRPC-Web past readMaxBytes destroys the request) leaves the rest of the
    // body on the wire: this connection cannot carry another request, so say so.
    const h1 = res as http.ServerResponse;
    const writeHead = h1.writeHead;
    h1.writeHead = function (this: http.ServerResponse, ...args: unknown[]) {
      if (!req.complete && req.destroyed && !this.headersSent) this.setHeader("connection", "close");
      return (writeHead as (...a: unknown[]) => http.ServerResponse).apply(this, args);
    } as typeof writeHead;
    // A body merely paused, half read, is not dumped by node (it only dumps
    // untouched ones): read and discard the rest, or the connection wedges.
    res.once("finish", () => {
      if (!req.complete && !req.destroyed) req.resume();
    });
  }
}
