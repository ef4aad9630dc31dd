import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import type { AdmissionGate, CriticalityPolicy } from "./admission-gate.js";
import { isReflectionService } from "./reflection.js";
import type { Logger } from "../observability/logger.js";
import { endUnreadBody } from "./request-watchdog.js";
import { requestIdHeader } from "../headers.js";
import { requestContext, timeoutRefusal, type RequestContext } from "./request-context.js";
import { codeLabel } from "../observability/code-label.js";
import { refusalError } from "../refusals.js";
import { refusedRequestTraceId } from "../observability/tracing.js";
import type { EarlyResendHold } from "../edge/early-resend.js";

export interface RequestGateOptions {
  logger: Logger;
  /** The edge's checks, first (edge.ts: authentication, the client's rate limit, its tenant's quota); the gateway only. Throw a ConnectError (or return a promise that rejects with one) to refuse. */
  edgeCheck?: (context: HandlerContext, request: RequestContext) => void | Promise<void>;
  /** What start-up still waits for; undefined once the server serves. */
  waitingFor: () => string | undefined;
  /** How requests are classified for shedding (the edge assigns, inner hops take the caller's). */
  criticality: CriticalityPolicy;
  /** Admission control; undefined when the server admits everything at once. */
  admission?: AdmissionGate;
  /** The edge's hold of refusals to clients that resend before their pushback (edge/early-resend.ts); the gateway only. */
  resendHold?: EarlyResendHold;
}

const healthService = "grpc.health.v1.Health";

/**
 * Everything decided from an RPC's headers alone, as Connect's
 * `requestGate`: it runs after the headers are parsed and before the body is
 * read, and Connect writes what it throws in the caller's own protocol (gRPC
 * and gRPC-Web status, Connect unary JSON with the HTTP status, Connect
 * streaming end-of-stream), with the error's metadata as response headers or
 * trailers (the pushback hint) and the x-request-id set here. In order:
 * a timeout header of the request's protocol that cannot be served is
 * refused, for every RPC, as connect-node did when it parsed the header
 * itself (since serve() parses it once and hides it from Connect,
 * connect-adapter.ts; it is a protocol error, checked before who is
 * asking, and never queued); health checks pass untouched (probes carry no
 * credentials, and a probe shed under load would get a busy instance
 * restarted), then authentication, the client's rate limit and its
 * tenant's quota, "still starting", and admission control.
 */
export function createRequestGate(opts: RequestGateOptions): (context: HandlerContext) => Promise<void> {
  return async (context) => {
    // Built by serve() when the headers arrived (request-context.ts).
    const request = requestContext(context);
    if (!request) throw new ConnectError("request gate: no request context; the gate runs only inside serve()", Code.Internal);
    const { exchange } = request;
    const badTimeout = timeoutRefusal(request, context.protocolName);
    if (badTimeout) throw refused(badTimeout, context, request, opts.logger);
    if (context.service.typeName === healthService) {
      if (exchange) endUnreadBody(exchange.req, exchange.res);
      return;
    }
    // The request's path, which named this method (connect-adapter.ts routes by it).
    request.criticality = opts.criticality(request.procedure, context.requestHeader);
    try {
      // Awaited only when it is asynchronous (a token to verify): no extra turn per request otherwise.
      const checking = opts.edgeCheck?.(context, request);
      if (checking) await checking;
      // Server reflection is answered while starting and never queued or
      // shed, like health: a tool asking for the schema costs a table lookup.
      // It still needs the edge's credentials and counts against its rate limit.
      if (isReflectionService(context.service.typeName)) return;
      const waitingFor = opts.waitingFor();
      if (waitingFor !== undefined) throw refusalError(`starting: waiting for ${waitingFor}`, Code.Unavailable, { reason: "STARTING" });
      await opts.admission?.admit(context, request);
    } catch (e) {
      const error = refused(e, context, request, opts.logger);
      const holdMs = exchange && opts.resendHold ? opts.resendHold.holdMs(exchange.req, error.metadata, request.deadlineAt) : 0;
      if (holdMs > 0) await heldFor(holdMs, context.signal);
      throw error;
    }
  };
}

/** The error to answer with (Connect writes it in the caller's protocol), logged as a refusal. */
function refused(e: unknown, context: HandlerContext, request: RequestContext, logger: Logger): ConnectError {
  const error = ConnectError.from(e);
  const { requestId } = request;
  context.responseHeader.set(requestIdHeader, requestId);
  request.logged = true;
  logger.info(
    {
      trace_id: refusedRequestTraceId(request),
      procedure: `/${context.service.typeName}/${context.method.name}`,
      code: codeLabel(error.code),
      error: error.rawMessage,
      // What the caller is not told (which check failed, edge-auth.ts): for the operator only.
      ...(error.cause instanceof Error ? { detail: error.cause.message } : {}),
      requestId,
      durationMs: Math.round((performance.now() - request.arrivedAt) * 10) / 10,
    },
    "rpc refused before the handler",
  );
  return error;
}

/** Waits `ms`, or until the caller leaves (the answer is then not written at all). */
function heldFor(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
