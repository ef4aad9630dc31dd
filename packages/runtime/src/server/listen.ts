import * as http from "node:http";
import * as http2 from "node:http2";
import * as net from "node:net";
import { type ConnectionAgeConfig, limitConnectionAge } from "./connection-age.js";
import * as tls from "node:tls";
import { certificateNames, type ListenTls, type TlsMaterial } from "./tls.js";

export type RequestHandler = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => void;

export interface Listener {
  readonly port: number;
  /** Stop accepting; tell HTTP/2 peers to go away (GOAWAY) and HTTP/1.1 peers to close. */
  stopAccepting(): void;
  /**
   * Resolves when every HTTP/2 session has closed: each has had its final
   * GOAWAY (after the peer acknowledged the notice, or 1 s) and finished its
   * streams. Destroying a session before then refuses the streams the peer
   * sent before it saw the notice.
   */
  sessionsClosed(): Promise<void>;
  /** Destroy every remaining connection. */
  destroy(): void;
  /** Resolves when every connection is gone. */
  closed: Promise<void>;
}

const preface = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/**
 * Serves HTTP/2 without TLS (h2c, prior knowledge) and, when `http1` is set,
 * HTTP/1.1 on the same port. With `tls`, the same over TLS: the protocol is
 * the one ALPN chose (h2, or http/1.1 when `http1` is set).
 *
 * `http2.createServer` refuses HTTP/1.1, but the gateway must serve
 * browsers and curl (Connect JSON, gRPC-Web) and gRPC clients on one port.
 * Each connection is then routed by its first bytes: the HTTP/2 connection
 * preface goes to the HTTP/2 server, anything else to the HTTP/1.1 server.
 * Either way the server gets the socket itself, with the bytes read so far
 * put back (`unshift`): node's HTTP/2 session consumes a socket's buffered
 * bytes before it reads the native handle, and HTTP/1.1 reads them first too.
 *
 * Every accepted socket has Nagle's algorithm off (`noDelay`). A server
 * writes a response as several small writes (headers, data, trailers);
 * with Nagle on, the second one waits for the peer's delayed ACK, about
 * 40 ms per call. Node turns it off by itself for the sockets an
 * `http.Server` accepts (not for sockets handed over with
 * `emit("connection")`, as here) and for the socket of every HTTP/2
 * session, but only through `setNoDelay()`, which a JavaScript stream
 * standing in for a socket does not have: that is how the gateway's HTTP/2
 * connections kept Nagle on until they got the real socket (see
 * docs/performance.md).
 */
export async function listen(opts: {
  host: string;
  port: number;
  handler: RequestHandler;
  /** Also accept HTTP/1.1 (the gateway, the operator port). */
  http1: boolean;
  /** Largest header block accepted, in bytes. */
  maxHeaderBytes?: number;
  /** GOAWAY on each HTTP/2 connection after this age (connection-age.ts); none when absent. */
  connectionAge?: ConnectionAgeConfig;
  /** TLS on this port; plain (h2c and HTTP/1.1) without it. */
  tls?: ListenTls;
}): Promise<Listener> {
  const maxHeaderBytes = opts.maxHeaderBytes ?? 16 * 1024;
  let accepting = true;
  /** HTTP/1.1 answers not yet started: told to close their connection once the listener stops. */
  const h1Pending = new Set<http.ServerResponse>();
  /** Each open HTTP/1.1 connection, and whether a request has arrived on it yet (closeIdle). */
  const h1Connections = new Map<net.Socket, boolean>();
  const h1 = http.createServer({ maxHeaderSize: maxHeaderBytes }, (req, res) => {
    h1Connections.set(req.socket, true);
    // Stopping: this answer says "Connection: close" and node closes the
    // connection after it, so a keep-alive client does not send its next
    // request on a connection destroy() is about to cut.
    if (!accepting) res.shouldKeepAlive = false;
    else {
      h1Pending.add(res);
      res.once("close", () => h1Pending.delete(res));
    }
    opts.handler(req, res);
  });
  h1.keepAliveTimeout = 65_000;
  const h2 = http2.createServer({ maxSessionMemory: 20, settings: { maxHeaderListSize: maxHeaderBytes } }, opts.handler);
  const sockets = new Set<net.Socket>();
  const sessions = new Set<http2.ServerHttp2Session>();
  const waitingForSessions: (() => void)[] = [];
  /** The accepted socket each session runs on (the session only exposes a proxy of it), once its preface is out. */
  const socketOf = new WeakMap<http2.ServerHttp2Session, net.Socket>();
  let handingOver: net.Socket | undefined;
  const toH2 = (socket: net.Socket) => {
    // The server creates the session, and emits "session", synchronously.
    handingOver = socket;
    h2.emit("connection", socket);
    handingOver = undefined;
  };
  h2.on("session", (s) => {
    // Once the peer's SETTINGS have been read, our own (the connection
    // preface, which must come first) are out: the session writes them when
    // it starts, before it reads anything. (Node reports the peer's
    // acknowledgement of ours, "localSettings", only later, sometimes after
    // the first requests.)
    // Not over TLS: a TLS socket takes one write at a time (node's TLSWrap
    // asserts it), so a frame written beside the session's own writes would
    // abort the process; a TLS session gets node's goaway() instead.
    const socket = handingOver;
    if (socket && !(socket instanceof tls.TLSSocket)) s.once("remoteSettings", () => socketOf.set(s, socket));
    sessions.add(s);
    s.on("close", () => {
      sessions.delete(s);
      if (sessions.size === 0) for (const resolve of waitingForSessions.splice(0)) resolve();
    });
    // A misbehaving peer must never take the process down.
    s.on("error", () => {});
    if (opts.connectionAge) limitConnectionAge(s, opts.connectionAge, { goAway: () => closeGracefully(s, socketOf.get(s)), cut: () => s.destroy() });
  });
  // Malformed requests are answered with 400 by node and must not crash us.
  h1.on("clientError", (_err, socket) => {
    if (socket.writable) socket.end("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
    else socket.destroy();
  });

  const toH1 = (socket: net.Socket) => {
    h1Connections.set(socket, false);
    socket.once("close", () => h1Connections.delete(socket));
    h1.emit("connection", socket);
  };
  /** Tracks an accepted connection; false when it was closed because the listener stopped. */
  const accepted = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    if (!accepting) socket.destroy();
    return accepting;
  };

  let stopWatching = () => {};
  const server = opts.tls
    ? tlsServer(opts.tls, opts.http1, (socket) => {
        if (!accepted(socket)) return;
        if (socket.alpnProtocol === "h2") toH2(socket);
        else if (opts.http1) toH1(socket);
        else {
          opts.tls?.onRefused?.(`ALPN ${String(socket.alpnProtocol)}: only h2 is served here`);
          socket.destroy();
        }
      })
    : net.createServer({ noDelay: true }, (socket) => {
        if (!accepted(socket)) return;
        if (!opts.http1) {
          toH2(socket);
          return;
        }
        let head = Buffer.alloc(0);
        const route = (chunk: Buffer) => {
          head = Buffer.concat([head, chunk]);
          const n = Math.min(head.length, preface.length);
          const isH2 = head.subarray(0, n).equals(preface.subarray(0, n));
          if (isH2 && head.length < preface.length) return; // need more bytes to decide
          socket.off("data", route);
          socket.pause();
          socket.unshift(head);
          if (isH2) {
            // The session reads what is buffered (the preface) on its next tick,
            // then the native handle: no JavaScript stream in between.
            toH2(socket);
          } else {
            toH1(socket);
            socket.resume();
          }
        };
        socket.on("data", route);
      });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as net.AddressInfo;
  const closed = new Promise<void>((resolve) => server.on("close", () => resolve()));
  if (opts.tls && server instanceof tls.Server) {
    const secure = server;
    const { allowedCallers } = opts.tls;
    stopWatching = opts.tls.files.onChange((m) => secure.setSecureContext(secureContextOptions(m, allowedCallers !== undefined)));
  }

  return {
    port: address.port,
    stopAccepting() {
      accepting = false;
      stopWatching();
      server.close();
      // http.Server's own closeIdleConnections() knows only the connections
      // of a server that listens itself (this one is handed its sockets).
      closeIdle(h1Connections, h1Pending);
      for (const res of h1Pending) if (!res.headersSent) res.shouldKeepAlive = false;
      for (const s of sessions) closeGracefully(s, socketOf.get(s));
    },
    sessionsClosed() {
      return sessions.size === 0 ? Promise.resolve() : new Promise<void>((resolve) => waitingForSessions.push(resolve));
    },
    destroy() {
      for (const s of sessions) s.destroy();
      for (const sock of sockets) sock.destroy();
    },
    closed,
  };
}

/**
 * A TLS server handing each connection, once its handshake is done, to
 * `onConnection`. With allowed callers, a client certificate is required
 * (signed by the CA, checked in the handshake) and its name must be one of
 * them (checked here, before any request is read).
 */
function tlsServer(opts: ListenTls, http1: boolean, onConnection: (socket: tls.TLSSocket) => void): tls.Server {
  const mutual = opts.allowedCallers !== undefined;
  const server = tls.createServer(
    { ...secureContextOptions(opts.files.material, mutual), ALPNProtocols: http1 ? ["h2", "http/1.1"] : ["h2"], noDelay: true },
    (socket) => {
      if (mutual) {
        const names = certificateNames(socket.getPeerCertificate());
        if (!names.some((n) => opts.allowedCallers!.has(n))) {
          opts.onRefused?.(`client certificate for ${names.join(", ") || "no name"}: not an expected caller (${[...opts.allowedCallers!].join(", ")})`);
          socket.destroy();
          return;
        }
      }
      onConnection(socket);
    },
  );
  // A failed handshake (no client certificate, one from another CA, a plain-text client) never reaches a handler.
  server.on("tlsClientError", (e) => opts.onRefused?.(`TLS handshake: ${e.message}`));
  return server;
}

function secureContextOptions(m: TlsMaterial, mutual: boolean): tls.TlsOptions {
  return { cert: m.cert, key: m.key, ...(m.ca ? { ca: m.ca } : {}), requestCert: mutual, rejectUnauthorized: mutual };
}

/**
 * HTTP/1.1 has no shutdown notice: a server can only close a connection, and
 * a keep-alive client that sends its next request on an idle connection just
 * as the server closes it gets a reset or EPIPE for a request nobody refused
 * (connect-node reports it as INTERNAL; a caller of a non-idempotent method
 * cannot tell whether it ran). That race cannot be avoided, only placed. The
 * idle connections are closed the moment the listener stops, as Go's
 * `Server.Shutdown` does (connections that have served a request and have
 * none pending), while the clients' own requests are still in flight
 * on their busy connections: by the time a client picks a pooled connection
 * again, it has seen the close. The busy ones answer with "Connection: close"
 * and close after the answer (so do requests that arrive on them later),
 * and never become idle. Left for destroy() to cut, after the drain, is only
 * a connection whose answer did not finish. Keeping idle connections open
 * until then instead (as before) put the race where the clients, walking
 * down their pools past connections that closed after their answers, were
 * most likely to pick one of them.
 */
function closeIdle(connections: Map<net.Socket, boolean>, pending: Set<http.ServerResponse>): void {
  const busy = new Set<net.Socket | null>();
  for (const res of pending) busy.add(res.socket);
  // A connection no request has arrived on yet was just opened: its first
  // request is on its way, and is answered with "Connection: close" (as Go
  // leaves a new connection alone).
  for (const [socket, served] of connections) if (served && !busy.has(socket)) socket.destroy();
}

/** Longest wait for the peer to acknowledge the shutdown notice. */
const shutdownNoticeMs = 1000;

/** GOAWAY, NO_ERROR, last stream id 2^31-1: RFC 9113 section 6.8's shutdown notice, as a frame. */
const shutdownNotice = Buffer.from([0, 0, 8, 0x07, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0]);

/**
 * HTTP/2 graceful shutdown in two steps (RFC 9113 section 6.8), as nghttp2,
 * Go and Envoy do it. A single GOAWAY names the last stream the server has
 * seen, so a request the client sent just before it arrived is refused
 * (REFUSED_STREAM, which connect-node's client reports as INTERNAL) although
 * nothing went wrong. First a notice (GOAWAY with the largest stream id:
 * open no new streams, the ones on their way are still served), then a
 * PING: its acknowledgement comes after every stream the client opened
 * before it saw the notice, and only then the final GOAWAY. In-flight
 * streams finish either way.
 *
 * The notice is written on the socket, not by the session: node has no
 * shutdown notice (nghttp2's `nghttp2_submit_shutdown_notice`), and its
 * `goaway(NO_ERROR, 2 ** 31 - 1)` is a real GOAWAY to nghttp2, which then
 * drops every new stream, so the final GOAWAY refused exactly the streams
 * the notice is for (listen.spec.ts). Node writes whole frames, so a frame
 * written between its writes is one more frame on the connection; nghttp2
 * does not know it was sent, and keeps serving new streams until the final
 * GOAWAY. Only once our connection preface (SETTINGS), which must come
 * first, is out; before that, node's goaway().
 */
function closeGracefully(session: http2.ServerHttp2Session, socket: net.Socket | undefined): void {
  if (session.closed || session.destroyed) return;
  let closed = false;
  const close = () => {
    if (closed || session.closed || session.destroyed) return;
    closed = true;
    session.close();
  };
  try {
    if (socket?.writable) socket.write(shutdownNotice);
    else session.goaway(http2.constants.NGHTTP2_NO_ERROR, 2 ** 31 - 1);
    if (!session.ping(close)) close(); // too many pings unacknowledged: don't wait
  } catch {
    close();
    return;
  }
  setTimeout(close, shutdownNoticeMs).unref();
}
