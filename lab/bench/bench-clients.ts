/**
 * The load worker's clients, one set per leg: fresh connections, TCP
 * no-delay on every one of them (the client must not add Nagle delays of
 * its own to what it measures), closed when the leg ends.
 */
import * as http from "node:http";
import * as net from "node:net";
import type { DescService } from "@bufbuild/protobuf";
import { createClient, type Client, type Transport } from "@connectrpc/connect";
import { Http2SessionManager, createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import type { Protocol } from "./leg.js";
import { assertLoopback } from "../load/loopback.js";

export interface ClientFactory {
  client<T extends DescService>(service: T): Client<T>;
  close(): void;
}

/**
 * gRPC over h2c: every user is a stream on one HTTP/2 connection. Connect
 * JSON over HTTP/1.1: every user gets its own keep-alive connection.
 */
export function clientFactory(baseUrl: string, protocol: Protocol, concurrency: number): ClientFactory {
  assertLoopback(baseUrl, "bench");
  let transport: Transport;
  let close: () => void;
  if (protocol === "grpc-h2c") {
    const sessions = new Http2SessionManager(baseUrl, undefined, {
      createConnection: (authority: URL) => net.connect({ host: authority.hostname, port: Number(authority.port), noDelay: true }),
    });
    transport = createGrpcTransport({ baseUrl, sessionManager: sessions });
    close = () => sessions.abort();
  } else {
    const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency, noDelay: true });
    transport = createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: false, nodeOptions: { agent } });
    close = () => agent.destroy();
  }
  return { client: (service) => createClient(service, transport), close };
}
