import { Code, ConnectError, type Interceptor, type StreamResponse, type UnaryResponse } from "@connectrpc/connect";

type UnaryOrStreamResponse = UnaryResponse | StreamResponse;
import {
  createScope,
  currentFaults,
  faultApplies,
  injectedDelay,
  shouldFail,
  abortReason,
  remainingMs,
  runInScope,
  type CallScope,
} from "@platform/resilience";
import type { Logger } from "./logger.js";
import type { DeadlineConfig, ResilienceProfile } from "./server-config.js";
import { deadlineMetrics, rpcServerMetrics } from "./metrics.js";
import { grpcRetryPushbackHeader, requestIdHeader, retryAfterHeader } from "./headers.js";
import { createRequestContext, fetchHeader, requestContext } from "./request-context.js";
import { codeLabel } from "./code-label.js";
import { endSpan, startServerSpan, traceFields, withServerSpanActive } from "./tracing.js";

/**
 * The inbound half of deadline propagation, plus the per-request log line
 * and RPC metrics.
 *
 * For each request it resolves one deadline (the caller's, capped; or the
 * configured default), creates a CallScope whose signal fires on that
 * deadline or when the caller goes away, and runs the handler inside it, so
 * that every downstream call and SQL statement below inherits the budget
 * without handlers passing anything by hand.
 *
 * A handler that ignores its signal still answers at the deadline: the
 * interceptor races it, answers DEADLINE_EXCEEDED, and counts the work that
 * finishes later as work nobody waited for.
 */
export function inboundInterceptor(opts: {
  deadline: DeadlineConfig;
  profile: ResilienceProfile;
  logger: Logger;
  /** Called with every request's outcome (the edge's intake controller listens). */
  onOutcome?: (code: Code | "ok", durationMs: number) => void;
  /** Aborts every in-flight request when the drain period of a shutdown ends. */
  shutdownSignal: AbortSignal;
}): Interceptor {
  const { deadline, logger, shutdownSignal } = opts;
  const naive = opts.profile.kind === "naive";
  const rpc = rpcServerMetrics();
  const dl = deadlineMetrics();

  return (next) => async (req) => {
    const procedure = `/${req.service.typeName}/${req.method.name}`;
    const started = performance.now();
    // Built by serve() when the headers arrived; built here only for a
    // request that did not come through serve() (an in-memory transport).
    const given = requestContext({ values: req.contextValues });
    const context =
      given ??
      createRequestContext({ header: fetchHeader(req.header), procedure, arrivedAt: started, deadline, trustCaller: true });
    context.logged = true;
    const { requestId, caller } = context;
    if (context.deadlineSource === "default") {
      dl.missing.inc({ procedure });
      // At the edge a missing deadline is normal (browsers, curl); below it,
      // it means a caller bypassed propagation, which deserves a warning.
      if (!deadline.edge) logger.warn({ procedure, requestId, fallbackMs: context.timeoutMs }, "request arrived without a deadline; applied the fallback");
    } else if (context.deadlineSource === "capped") {
      dl.capped.inc({ procedure });
    }
    dl.remainingAtArrival.observe({ procedure }, context.timeoutMs / 1000);

    const scope = createScope({
      timeoutMs: context.timeoutMs,
      startedAt: context.arrivedAt,
      deadlineSignal: context.deadline,
      requestId,
      procedure,
      criticality: context.criticality,
      ...(caller ? { caller } : {}),
      // The naive profile does not notice its caller leaving: work goes on.
      parentSignals: naive ? [shutdownSignal] : [req.signal, shutdownSignal],
    });
    const span = startServerSpan(scope, req.header, req.service.typeName, req.method.name, {
      "deadline.timeout_ms": context.timeoutMs,
      "deadline.remaining_ms": Math.floor(remainingMs(scope)),
      "deadline.source": context.deadlineSource,
      "request.id": requestId,
    });
    rpc.inFlight.inc({ procedure });
    let code: Code | "ok" = Code.Unknown;
    let error: ConnectError | undefined;
    try {
      const res = await runInScope(scope, () =>
        withServerSpanActive(scope, () =>
          naive ? lateCounted(handle(next, req, scope), scope, procedure, dl.finishedAfterDeadline) : raceScope(handle(next, req, scope), scope, procedure, dl.finishedAfterDeadline),
        ),
      );
      res.header.set(requestIdHeader, requestId);
      code = "ok";
      return res;
    } catch (e) {
      error = toInboundError(e, scope, requestId, logger, procedure);
      code = error.code;
      error.metadata.set(requestIdHeader, requestId);
      throw error;
    } finally {
      scope.dispose();
      if (!given) context.dispose();
      endSpan(span, code, error?.rawMessage);
      rpc.inFlight.dec({ procedure });
      const codeName = codeLabel(code);
      const seconds = (performance.now() - started) / 1000;
      rpc.requests.inc({ procedure, code: codeName });
      opts.onOutcome?.(code, seconds * 1000);
      rpc.duration.observe({ procedure, code: codeName }, seconds);
      const line = {
        procedure,
        code: codeName,
        durationMs: Math.round(seconds * 1000 * 10) / 10,
        requestId,
        ...traceFields(scope),
        ...(caller ? { caller } : {}),
        deadlineMs: context.timeoutMs,
        deadlineSource: context.deadlineSource,
        ...(error ? { error: error.rawMessage } : {}),
      };
      if (error && isServerFault(error.code)) logger.warn(line, "rpc");
      else logger.info(line, "rpc");
    }
  };
}

/** Runs the handler, after the handler faults in force, if any (no extra promise when there are none). */
function handle<T>(next: (req: T) => Promise<UnaryOrStreamResponse>, req: T, scope: CallScope): Promise<UnaryOrStreamResponse> {
  const fault = currentFaults().handler;
  if (!faultApplies(fault)) return next(req);
  return (async () => {
    await injectedDelay(fault, scope.signal);
    if (shouldFail(fault)) throw new ConnectError("injected fault: handler failed", Code.Unavailable);
    return next(req);
  })();
}

/**
 * Settles with the handler, or with DEADLINE_EXCEEDED / CANCELLED as soon as
 * the scope aborts, whichever is first.
 */
function raceScope<T>(work: Promise<T>, scope: CallScope, procedure: string, late: { inc(l: { procedure: string }): void }): Promise<T> {
  if (scope.signal.aborted) {
    work.catch(() => {});
    return Promise.reject(abortError(scope));
  }
  return new Promise<T>((resolve, reject) => {
    let answered = false;
    const onAbort = () => {
      answered = true;
      reject(abortError(scope));
    };
    scope.signal.addEventListener("abort", onAbort, { once: true });
    const settle = () => {
      scope.signal.removeEventListener("abort", onAbort);
      if (answered || remainingMs(scope) < 0) late.inc({ procedure });
    };
    work.then(
      (v) => {
        settle();
        if (!answered) resolve(v);
      },
      (e: unknown) => {
        settle();
        if (!answered) reject(e);
      },
    );
  });
}

/** The naive profile runs to completion; work that ends past the caller's deadline is still counted. */
async function lateCounted<T>(work: Promise<T>, scope: CallScope, procedure: string, late: { inc(l: { procedure: string }): void }): Promise<T> {
  try {
    return await work;
  } finally {
    if (remainingMs(scope) < 0) late.inc({ procedure });
  }
}

function abortError(scope: CallScope): ConnectError {
  switch (abortReason(scope)) {
    case "deadline":
      return new ConnectError("deadline exceeded before the request completed", Code.DeadlineExceeded);
    case "shutdown":
      return new ConnectError("server is shutting down; retry on another instance", Code.Unavailable);
    default:
      return new ConnectError("request cancelled by the caller", Code.Canceled);
  }
}

/**
 * Every failure leaves as a deliberate ConnectError. Unexpected exceptions
 * are logged with their stack and answered as INTERNAL without internals
 * (a SQL error message is not for the caller).
 */
function toInboundError(e: unknown, scope: CallScope, requestId: string, logger: Logger, procedure: string): ConnectError {
  if (e instanceof ConnectError) {
    // A fresh error: the request id goes into its metadata, which connect-es
    // would not send for an error parsed from the wire (2.2+, #1717); only
    // the pushback hint crosses the hop with it.
    const out = new ConnectError(e.rawMessage, e.code);
    out.details.push(...e.details);
    for (const [k, v] of e.metadata) if (k === retryAfterHeader || k === grpcRetryPushbackHeader) out.metadata.set(k, v);
    return out;
  }
  if (scope.signal.aborted) return abortError(scope);
  logger.error({ err: e, procedure, requestId }, "unexpected error in handler");
  return new ConnectError(`internal error (request id ${requestId})`, Code.Internal);
}

function isServerFault(code: Code): boolean {
  return code === Code.Internal || code === Code.Unknown || code === Code.DataLoss || code === Code.Unavailable;
}

