import { Code, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import type { DescService } from "@bufbuild/protobuf";
import { createLogger, type Logger } from "../observability/logger.js";
import { collectProcessMetrics } from "../observability/metrics.js";
import { HealthState, type OwnResources, registerHealthService } from "./health.js";
import { registerReflectionService } from "./reflection.js";
import { inOrder, serverInterceptors } from "./server-interceptors.js";
import { pluginsWith, type PlatformPlugin, type ServerComposition } from "../config/plugin.js";
import { listen, type Listener } from "./listen.js";
import { serverTls } from "./tls.js";
import { dispatchEndpoint, metricsEndpoint, probeEndpoints, sendText, type HttpEndpoint } from "./http-endpoints.js";
import type { ServerConfig } from "../config/server-config.js";
import { faultInjectionEndpoints } from "../faults/admin-faults.js";
import { configEndpoint } from "../config/effective-config.js";
import { createAdmissionGate, propagatedCriticality } from "./admission-gate.js";
import type { ServerEdge } from "../edge/edge.js";
import { EarlyResendHold } from "../edge/early-resend.js";
import type { Intake } from "../edge/intake.js";
import { createRequestGate } from "./request-gate.js";
import { StreamAdmission } from "./stream-admission.js";
import { createRequestContext, nodeHeader, type RequestContextInput } from "./request-context.js";
import { createRpcAdapter } from "./connect-adapter.js";
import { checkConnectPatch } from "./connect-compat.js";
import { requestCompressions } from "./request-compression.js";
import { initTracing, refusedRequestTraceId } from "../observability/tracing.js";

/** After the drain, how long aborted handlers get to write their answer. */
const shutdownGraceMs = 500;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

export interface ServeOptions {
  config: ServerConfig;
  /** Registers this service's implementations. */
  routes: (router: ConnectRouter) => void;
  /** The APIs served, for per-service health entries. */
  services: DescService[];
  logger?: Logger;
  /** Extra interceptors, run inside the deadline scope, after the platform's own. */
  interceptors?: Interceptor[];
  /** Plug-ins for this server, after those installed in the process (plugin.ts). */
  plugins?: PlatformPlugin[];
  /** Extra operator endpoints on the admin port, keyed "METHOD /path". */
  adminEndpoints?: Record<string, HttpEndpoint>;
  /**
   * Also serve HTTP/1.1 on the RPC port (Connect JSON from curl and browsers,
   * gRPC-Web). The gateway does; internal services speak h2c only.
   */
  http1?: boolean;
  /**
   * The public edge's additions (edge.ts `createEdge`: CORS, authentication,
   * rate limit, criticality per method, intake controller): the gateway
   * passes it, nobody else. Without it a request's criticality is the
   * caller's x-criticality (critical when absent).
   */
  edge?: ServerEdge;
  /** Called after the last request has finished: close pools here. */
  onShutdown?: () => Promise<void>;
  /**
   * Work that must finish before the service is ready (migrations, the first
   * database connection). Meanwhile the ports are open, health says
   * NOT_SERVING and every other RPC is answered UNAVAILABLE
   * "starting: waiting for <waitingFor>"; `RunningServer.ready` settles with it.
   */
  startup?: { ready: Promise<void>; waitingFor: string };
  /**
   * What this service's APIs need of their own to serve (its database),
   * as its health check tells callers (health.ts): callers whose breakers
   * opened on this service probe it to close them as soon as it serves
   * again, and callers whose calls are overdue learn whether it waits out
   * a restart (restart-signal.ts).
   */
  ownResources?: OwnResources;
}

/** What a spec replaces inside serve() (`serveWithHooks`, from `@platform/runtime/testing`). */
export interface ServeHooks {
  /** The timeout-header parser of every request's context (request-context.ts): a spec counts that each request's header is parsed once. */
  parseTimeout?: RequestContextInput["parse"];
}

export interface RunningServer {
  readonly port: number;
  readonly adminPort: number;
  readonly logger: Logger;
  readonly health: HealthState;
  /** Resolves once the server serves (after `startup.ready`); rejects when start-up failed. */
  readonly ready: Promise<void>;
  /** Drains (bounded by DRAIN_TIMEOUT_MS), then closes everything. Idempotent. */
  shutdown(reason?: string): Promise<void>;
}

/**
 * One call that serves a set of Connect routes the platform way: Connect,
 * gRPC and gRPC-Web on one port (HTTP/1.1 and h2c), deadline capture and
 * propagation, request logs, metrics, grpc.health.v1 and HTTP probes,
 * gRPC server reflection (v1 and v1alpha) of the served APIs, an operator
 * port, and graceful shutdown. The core every service runs: the public
 * edge's additions come in as `edge` (edge.ts), changes to the composition
 * as plug-ins (plugin.ts).
 */
export function serve(opts: ServeOptions): Promise<RunningServer> {
  return serveWithHooks(opts, {});
}

/** serve() with `hooks` in place of its own parts. */
export async function serveWithHooks(opts: ServeOptions, hooks: ServeHooks): Promise<RunningServer> {
  const { config } = opts;
  const logger = opts.logger ?? createLogger(config.serviceName, config.logLevel, config.replicaName);
  checkConnectPatch(logger);
  collectProcessMetrics(config.replicaName);
  const flushTraces = await initTracing(config.serviceName, config.otlpEndpoint);
  const health = new HealthState(
    opts.services.map((s) => s.typeName),
    opts.ownResources,
  );
  const shutdownController = new AbortController();
  // Ended when a shutdown starts: streams end with a resume hint then, not at the drain deadline.
  const streamsEnd = new AbortController();
  // Server streams get the stream lifetime as their deadline's default and cap (docs/streams.md).
  const streamDeadline = { ...config.deadline, defaultMs: config.streams.maxLifetimeMs, maxMs: config.streams.maxLifetimeMs };
  const streamProcedures = new Set(
    opts.services.flatMap((s) => s.methods.filter((m) => m.methodKind === "server_streaming").map((m) => `/${s.typeName}/${m.name}`)),
  );
  // The edge's intake controller, started below once the composition says whether it runs.
  let intake: Intake | undefined;
  let composition: ServerComposition = {
    interceptors: serverInterceptors({
      deadline: config.deadline,
      logger,
      shutdownSignal: shutdownController.signal,
      streamsEndSignal: streamsEnd.signal,
      onOutcome: (code, ms) => intake?.record(code, ms),
    }),
    admission: true,
    intake: true,
  };
  for (const plugin of pluginsWith(opts.plugins)) {
    if (plugin.server) composition = plugin.server(composition, { config, logger, shutdownSignal: shutdownController.signal });
  }
  intake = composition.intake ? opts.edge?.startIntake(logger) : undefined;

  let inFlight = 0;
  let starting = opts.startup !== undefined;
  let drained: (() => void) | undefined;
  const admission = composition.admission
    ? createAdmissionGate({
        ...(intake ? { intake: intake.controller, onShed: () => intake?.record(Code.ResourceExhausted, 0) } : {}),
        config: config.admission,
        streams: {
          admission: new StreamAdmission(config.streams),
          // At the edge, the authenticated caller or the client's address; inside, the caller the edge named (else the process limit only).
          callerOf: (request) => request.caller ?? (opts.edge ? request.exchange?.req.socket?.remoteAddress : undefined),
        },
      })
    : undefined;
  const adapter = createRpcAdapter({
    routes(router) {
      opts.routes(router);
      registerHealthService(router, health);
      registerReflectionService(router, opts.services);
    },
    interceptors: [...inOrder(composition.interceptors), ...(opts.interceptors ?? [])],
    readMaxBytes: config.readMaxBytes,
    // gzip and br, with a truncated body answered INVALID_ARGUMENT (not INTERNAL).
    acceptCompression: requestCompressions,
    shutdownSignal: shutdownController.signal,
    // Auth, rate limit, "starting", admission: from the headers, before the
    // body is read; Connect answers a refusal in the caller's protocol.
    requestGate: createRequestGate({
      logger,
      ...(opts.edge ? { edgeCheck: opts.edge.check, resendHold: new EarlyResendHold() } : {}),
      waitingFor: () => (starting ? opts.startup?.waitingFor : undefined),
      criticality: opts.edge?.criticality ?? propagatedCriticality,
      ...(admission ? { admission } : {}),
    }),
    fallback(_req, res) {
      res.writeHead(404, { "content-type": "text/plain; charset=utf-8" });
      res.end("not found\n");
    },
  });

  const publicEndpoints = probeEndpoints(health);
  const main = await listen({
    host: config.host,
    port: config.port,
    http1: opts.http1 ?? false,
    connectionAge: config.connectionAge,
    tls: serverTls(config, logger),
    handler(req, res) {
      if (dispatchEndpoint(publicEndpoints, req, res)) return;
      // The request's context, its deadline counted from arrival (not from
      // when the body was parsed after waiting for admission): built once,
      // here, and handed to the gate, the interceptors and the handler.
      const arrivedAt = performance.now();
      const procedure = (req.url ?? "/").split("?")[0]!;
      const context = createRequestContext({
        header: nodeHeader(req),
        procedure,
        arrivedAt,
        deadline: streamProcedures.has(procedure) ? streamDeadline : config.deadline,
        trustCaller: !config.deadline.edge,
        exchange: { req, res },
        parse: hooks.parseTimeout,
      });
      // One listener for the request's end (one closure less per request): the
      // context's timer, the in-flight count (once counted), the refusal line.
      let counted = false;
      res.once("close", () => {
        context.dispose();
        if (counted && --inFlight === 0) drained?.();
        // Refused before any handler ran and not by the request gate (which
        // logs its own): a body Connect could not parse, an unknown method.
        if (!context.logged) {
          const grpcStatus = res.getHeader("grpc-status");
          logger.info(
            {
              trace_id: refusedRequestTraceId(context),
              procedure,
              status: res.statusCode,
              ...(grpcStatus !== undefined ? { grpcStatus } : {}),
              durationMs: Math.round((performance.now() - arrivedAt) * 10) / 10,
            },
            "rpc refused before the handler",
          );
        }
      });
      // A CORS preflight is plain HTTP, not an RPC: answered here.
      if (opts.edge?.answerHttp(req, res)) return;
      inFlight++;
      counted = true;
      // Connect gets the request without its timeout header, and the deadline
      // as the request's signal (connect-adapter.ts).
      adapter(req, res, context);
    },
  });

  const adminEndpoints = {
    ...probeEndpoints(health),
    ...metricsEndpoint(),
    ...faultInjectionEndpoints(config.faultInjection, logger),
    ...(intake?.endpoints ?? {}),
    ...configEndpoint(config.serviceName),
    ...(opts.adminEndpoints ?? {}),
  };
  const admin: Listener = await listen({
    host: config.adminHost,
    port: config.adminPort,
    http1: true,
    handler(req, res) {
      if (!dispatchEndpoint(adminEndpoints, req, res)) sendText(res, 404, "not found\n");
    },
  });

  let shuttingDown: Promise<void> | undefined;
  const ready = (async () => {
    if (opts.startup) {
      logger.info({ port: main.port, adminPort: admin.port }, `listening; not ready: waiting for ${opts.startup.waitingFor}`);
      await opts.startup.ready;
      starting = false;
    }
    if (shuttingDown) return;
    health.setAll(true);
    logger.info({ port: main.port, adminPort: admin.port }, "serving");
  })();
  ready.catch(() => {}); // the caller (runMain) handles it
  const shutdown = (reason = "shutdown") => {
    shuttingDown ??= (async () => {
      logger.info({ reason, inFlight }, "shutting down: refusing new requests, draining in-flight ones");
      /** Settles when the connections must be gone: the drain period plus the grace below. */
      const bound = sleep(config.drainTimeoutMs + shutdownGraceMs);
      health.setAll(false);
      main.stopAccepting();
      streamsEnd.abort("shutdown");
      if (inFlight > 0) {
        await new Promise<void>((resolve) => {
          drained = resolve;
          setTimeout(resolve, config.drainTimeoutMs).unref();
        });
      }
      if (inFlight > 0) logger.warn({ inFlight }, "drain period over: aborting the requests still running");
      shutdownController.abort("shutdown");
      // Give aborted handlers a moment to write their error.
      await Promise.race([main.closed, sleep(shutdownGraceMs)]);
      // An HTTP/2 session whose peer has not yet acknowledged the shutdown
      // notice may have streams on their way: destroying it would refuse them
      // (REFUSED_STREAM, INTERNAL to connect-node). Its final GOAWAY comes
      // within 1 s of the notice (listen.ts): wait for it, up to the bound.
      await Promise.race([main.sessionsClosed(), bound]);
      // Then cut what is left (HTTP/1.1 keep-alive connections, stuck sessions).
      main.destroy();
      admin.stopAccepting();
      admin.destroy();
      await opts.onShutdown?.();
      await flushTraces().catch(() => {});
      logger.info("stopped");
    })();
    return shuttingDown;
  };

  return { port: main.port, adminPort: admin.port, logger, health, ready, shutdown };
}
