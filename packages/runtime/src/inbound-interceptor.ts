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
  parseTimeoutHeader,
  resolveInboundDeadline,
  type CallScope,
} from "@platform/resilience";
import type { Logger } from "./logger.js";
import type { DeadlineConfig, ResilienceProfile } from "./server-config.js";
import { deadlineMetrics, rpcServerMetrics } from "./metrics.js";
import { requestIdFrom, requestIdHeader } from "./request-id.js";
import { codeLabel } from "./code-label.js";
import { callerHeader } from "./edge-auth.js";
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
/** Set by serve() on each request: its arrival time on the monotonic clock. Never trusted from the wire. */
export const arrivalHeader = "x-platform-arrival-ms";

export function inboundInterceptor(opts: {
  deadline: DeadlineConfig;
  profile: ResilienceProfile;
  logger: Logger;
  /** Called with the arrival token of every request that reached the interceptors. */
  onHandled?: (arrivalToken: string) => void;
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
    const requestId = requestIdFrom(req.header);
    const inbound = inboundTimeoutMs(req.header);
    const resolved = resolveInboundDeadline({ headerMs: inbound, defaultMs: deadline.defaultMs, maxMs: deadline.maxMs });
    if (resolved.source === "default") {
      dl.missing.inc({ procedure });
      // At the edge a missing deadline is normal (browsers, curl); below it,
      // it means a caller bypassed propagation, which deserves a warning.
      if (!deadline.edge) logger.warn({ procedure, requestId, fallbackMs: resolved.timeoutMs }, "request arrived without a deadline; applied the fallback");
    } else if (resolved.source === "capped") {
      dl.capped.inc({ procedure });
    }
    dl.remainingAtArrival.observe({ procedure }, resolved.timeoutMs / 1000);

    const arrivalToken = req.header.get(arrivalHeader);
    if (arrivalToken !== null) opts.onHandled?.(arrivalToken);
    const arrived = Number(arrivalToken);
    const caller = req.header.get(callerHeader) ?? undefined;
    const scope = createScope({
      timeoutMs: resolved.timeoutMs,
      ...(Number.isFinite(arrived) && arrived > 0 ? { startedAt: arrived } : {}),
      requestId,
      procedure,
      criticality: req.header.get("x-criticality") === "sheddable" ? "sheddable" : "critical",
      ...(caller ? { caller } : {}),
      // The naive profile does not notice its caller leaving: work goes on.
      parentSignals: naive ? [shutdownSignal] : [req.signal, shutdownSignal],
    });
    const span = startServerSpan(scope, req.header, req.service.typeName, req.method.name, {
      "deadline.timeout_ms": resolved.timeoutMs,
      "deadline.remaining_ms": Math.floor(remainingMs(scope)),
      "deadline.source": resolved.source,
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
        deadlineMs: resolved.timeoutMs,
        deadlineSource: resolved.source,
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

/** The caller's deadline in ms from the protocol's header, or undefined. */
function inboundTimeoutMs(header: Headers): number | undefined {
  for (const name of ["grpc-timeout", "connect-timeout-ms"]) {
    const v = header.get(name);
    if (v === null) continue;
    const parsed = parseTimeoutHeader(name, v);
    // Connect has already rejected malformed values with INVALID_ARGUMENT
    // before interceptors run; anything left unparsable here gets the default.
    if (parsed.ok) return parsed.ms;
  }
  return undefined;
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
    for (const [k, v] of e.metadata) if (k === "retry-after" || k === "grpc-retry-pushback-ms") out.metadata.set(k, v);
    return out;
  }
  if (scope.signal.aborted) return abortError(scope);
  logger.error({ err: e, procedure, requestId }, "unexpected error in handler");
  return new ConnectError(`internal error (request id ${requestId})`, Code.Internal);
}

function isServerFault(code: Code): boolean {
  return code === Code.Internal || code === Code.Unknown || code === Code.DataLoss || code === Code.Unavailable;
}

