import type { ClientSessionOptions, SecureClientSessionOptions } from "node:http2";
import type { Interceptor, Transport } from "@connectrpc/connect";
import { validateReadWriteMaxBytes } from "@connectrpc/connect/protocol";
import { createTransport } from "@connectrpc/connect/protocol-grpc";
import { compressionBrotli, compressionGzip, createNodeHttpClient, Http2SessionManager, type Http2SessionOptions } from "@connectrpc/connect-node";
import { systemClock } from "@platform/resilience";
import { Balancer, type BalancingMode } from "./balancer.js";
import { replicaCallMetrics } from "../../observability/metrics.js";
import { balancerInterceptor, originOf } from "./balancer-interceptor.js";
import type { OutlierDetectionConfig } from "./outlier-detector.js";
import { dnsResolver, staticResolver, type Resolver } from "./resolver.js";

export interface BalancedTransportOptions {
  dependency: string;
  /** The dependency's URL: its host name is resolved to every address it has. */
  baseUrl: string;
  /** A fixed list of origins instead of resolving `baseUrl` (local runs, tests). */
  addresses?: readonly string[];
  /** Or any other source of addresses. */
  resolver?: Resolver;
  /** How often the addresses are resolved again. */
  resolveIntervalMs: number;
  outlierDetection: OutlierDetectionConfig;
  mode?: BalancingMode;
  /** HTTP/2 PING settings of each replica's connection. */
  ping?: Http2SessionOptions;
  /** node's http2.connect options for each replica's connection (TLS: ca, cert, ...); `servername` defaults to the URL's host. */
  nodeOptions?: ClientSessionOptions | SecureClientSessionOptions;
  interceptors: Interceptor[];
}

/**
 * A gRPC transport over h2c (as connect-node's createGrpcTransport) that
 * keeps one HTTP/2 connection per replica of the dependency and sends each
 * call to the one the balancer picks (balancer.ts). The interceptors run
 * once per attempt, before the choice: breakers, limits and bulkheads stay
 * per dependency, as the caller sees them.
 */
export function createBalancedTransport(opts: BalancedTransportOptions): { transport: Transport; balancer: Balancer<ReplicaConnection> } {
  const hostname = new URL(opts.baseUrl).hostname;
  // Each connection goes to an address, not the name: TLS still verifies the name. The
  // caller's object itself, not a copy: its secure context is replaced when certificates
  // change (dependency-tls.ts), and every new connection must take the current one.
  const nodeOptions: ClientSessionOptions | SecureClientSessionOptions = opts.nodeOptions ?? {};
  if (opts.baseUrl.startsWith("https:")) (nodeOptions as SecureClientSessionOptions).servername ??= hostname;
  const balancer: Balancer<ReplicaConnection> = new Balancer({
    dependency: opts.dependency,
    resolver: opts.resolver ?? (opts.addresses !== undefined && opts.addresses.length > 0 ? staticResolver(opts.addresses) : dnsResolver(opts.baseUrl)),
    connect: (origin) => new ReplicaConnection(origin, opts.ping ?? {}, nodeOptions, () => balancer.resolveSoon()),
    clock: systemClock,
    random: Math.random,
    outlierDetection: opts.outlierDetection,
    ...(opts.mode ? { mode: opts.mode } : {}),
  });
  replicaCallMetrics(() => balancer.callCounts());
  void balancer.refresh();
  setInterval(() => void balancer.refresh(), opts.resolveIntervalMs).unref();
  const httpClient = createNodeHttpClient({
    httpVersion: "2",
    sessionProvider: (url) => {
      // The balancer interceptor put the replica's origin in front of the path (rebase): cut it off again, no URL parse per call.
      const origin = originOf(url);
      const endpoint = balancer.endpoint(origin);
      if (endpoint === undefined) throw new Error(`${opts.dependency}: ${origin} is no address of it`);
      return endpoint.connection;
    },
  });
  const transport = createTransport({
    baseUrl: opts.baseUrl,
    httpClient,
    useBinaryFormat: true,
    interceptors: [...opts.interceptors, balancerInterceptor(opts.dependency, balancer)],
    acceptCompression: [compressionGzip, compressionBrotli],
    sendCompression: null,
    ...validateReadWriteMaxBytes(undefined, undefined, undefined),
  });
  return { transport, balancer };
}

/**
 * One replica's HTTP/2 connection. A GOAWAY on it (the server's maximum
 * connection age, a shutdown) asks for a re-resolution at once: the
 * replica may be going away, or new ones may have come.
 */
export class ReplicaConnection extends Http2SessionManager {
  private readonly watched = new WeakSet<object>();

  constructor(
    origin: string,
    ping: Http2SessionOptions,
    nodeOptions: ClientSessionOptions | SecureClientSessionOptions,
    private readonly onGoaway: () => void,
  ) {
    super(origin, ping, nodeOptions);
  }

  override async request(...args: Parameters<Http2SessionManager["request"]>): ReturnType<Http2SessionManager["request"]> {
    const stream = await super.request(...args);
    const session = stream.session;
    if (session && !this.watched.has(session)) {
      this.watched.add(session);
      session.once("goaway", this.onGoaway);
    }
    return stream;
  }

  close(): void {
    this.abort();
  }
}
