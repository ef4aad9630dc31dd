/**
 * What a competent team writes around Connect without a resilience layer:
 * `connectNodeAdapter` on node's own servers, `createGrpcTransport` clients,
 * a process that says when it serves and stops when told. No interceptors,
 * no request logs, no deadlines. This is the yardstick of `npm run bench`
 * (lab/bench/), so it must stay plain: every cost the platform adds on top
 * of it is what the bench measures.
 *
 * TCP no-delay is on for every socket, server and client side: a plain
 * implementation that left Nagle's algorithm on would lose tens of
 * milliseconds per request to delayed ACKs on HTTP/2, and the comparison
 * would flatter the platform.
 */
import type { DescService } from "@bufbuild/protobuf";
import { createClient, type Client, type ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import * as http from "node:http";
import * as http2 from "node:http2";
import * as net from "node:net";

export function requiredEnv(name: string): string {
  const v = process.env[name];
  if (v === undefined || v === "") throw new Error(`${name} is required`);
  return v;
}

export function portEnv(name: string): number {
  const n = Number(requiredEnv(name));
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw new Error(`${name} must be a TCP port`);
  return n;
}

type Server = http.Server | http2.Http2Server;

function listenOn(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
}

/** gRPC, Connect and gRPC-Web over HTTP/2 without TLS (prior knowledge), no-delay on every accepted socket. */
export async function serveH2c(routes: (router: ConnectRouter) => void, port: number, host: string): Promise<Server> {
  const server = http2.createServer(connectNodeAdapter({ routes }));
  server.on("connection", (socket: net.Socket) => socket.setNoDelay(true));
  await listenOn(server, port, host);
  return server;
}

/** Connect (JSON or binary) and gRPC-Web over HTTP/1.1, no-delay on every accepted socket. */
export async function serveHttp1(routes: (router: ConnectRouter) => void, port: number, host: string): Promise<Server> {
  const server = http.createServer({ noDelay: true }, connectNodeAdapter({ routes }));
  await listenOn(server, port, host);
  return server;
}

/** A gRPC (h2c) client whose connection has no-delay on (http2.connect leaves Nagle on by default). */
export function grpcClient<T extends DescService>(service: T, baseUrl: string): Client<T> {
  const transport = createGrpcTransport({
    baseUrl,
    nodeOptions: {
      createConnection: (authority: URL) => net.connect({ host: authority.hostname, port: Number(authority.port), noDelay: true }),
    },
  });
  return createClient(service, transport);
}

/**
 * Starts the servers, tells the supervisor (ServiceProcess from
 * @platform/launcher) that we serve, and exits on SIGTERM, SIGINT or when
 * the supervisor's IPC channel closes (no orphans after a killed bench).
 */
export function runPlainService(name: string, start: () => Promise<{ close(): Promise<void> }>): void {
  let running: { close(): Promise<void> } | undefined;
  const stop = () => {
    // Bench traffic has ended when we are stopped: no draining to wait for.
    const closing = running?.close() ?? Promise.resolve();
    void closing.finally(() => process.exit(0));
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  if (process.send) process.on("disconnect", stop);
  start().then(
    (s) => {
      running = s;
      process.send?.({ type: "ready", service: name });
    },
    (e: unknown) => {
      process.stderr.write(`[${name}] failed to start: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      process.exit(1);
    },
  );
}

/** Closes servers and whatever else a service holds, ignoring connections still open. */
export function closer(servers: Server[], ...others: Array<() => Promise<void>>): { close(): Promise<void> } {
  return {
    async close() {
      for (const s of servers) {
        if (s instanceof http.Server) s.closeAllConnections();
        s.close();
      }
      for (const o of others) await o();
    },
  };
}
