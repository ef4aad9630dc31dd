import { Code, ConnectError, createContextKey, type Interceptor, type UnaryRequest, type StreamRequest } from "@connectrpc/connect";
import {
  abortReason,
  callsEndAt,
  markLocalRejection,
  currentFaults,
  currentScope,
  type CallScope,
  faultApplies,
  injectedDelay,
  shouldDropResponse,
  shouldFail,
  formatConnectTimeout,
  formatGrpcTimeout,
  remainingMs,
} from "@platform/resilience";
import { deadlineMetrics, okCallCells, rpcClientMetrics } from "../observability/metrics.js";
import { histogramCellsOf } from "../observability/metric-cells.js";
import { mapDownstreamError } from "./downstream-error.js";
import { callerHeader, connectTimeoutHeader, criticalityHeader, grpcTimeoutHeader, requestIdHeader, tenantHeader } from "../headers.js";
import { attemptKey } from "./retry-interceptor.js";
import { clientSpanNeeded, endSpan, startClientSpan } from "../observability/tracing.js";
import { codeLabel } from "../observability/code-label.js";
import { mapStreamFailure, onStreamEnd } from "../server/stream-messages.js";
import { refusalError } from "../refusals.js";

export interface OutboundOptions {
  /** Dependency name used in messages and metric labels, e.g. "stock". */
  dependency: string;
  /** Kept back from the remaining time so this hop can still write its own response. */
  hopReserveMs: number;
  /** Below this remaining budget the call is not started at all. */
  minBudgetMs: number;
}

const callDeadlineKey = createContextKey<number | undefined>(undefined, { description: "deadline of an outgoing call" });

/**
 * The absolute deadline of an outgoing call: ours minus the hop reserve,
 * kept back so that this hop can still write its own answer. Computed once
 * per call, by the first interceptor of the chain that needs it, and read
 * by the others (budget gate, bulkhead, deadline propagation); each
 * attempt's budget is this minus the time at which it is sent.
 */
export function callDeadlineAt(req: UnaryRequest | StreamRequest, scope: CallScope, hopReserveMs: number): number {
  let at = req.contextValues.get(callDeadlineKey);
  if (at === undefined) {
    at = callsEndAt(scope.deadlineAt, hopReserveMs);
    req.contextValues.set(callDeadlineKey, at);
  }
  return at;
}

/**
 * Refuses to start a call (attempt) that cannot be useful: less than the
 * minimum budget is left once the hop reserve is kept back. Runs before the
 * breaker and the bulkhead, so such a call takes no slot and says nothing
 * about the dependency's health.
 */
export function budgetGateInterceptor(opts: OutboundOptions): Interceptor {
  const client = rpcClientMetrics();
  const dl = deadlineMetrics();
  return (next) => (req) => {
    const scope = currentScope();
    if (scope) {
      const budget = Math.floor(callDeadlineAt(req, scope, opts.hopReserveMs) - scope.clock.now());
      if (budget < opts.minBudgetMs) {
        dl.rejectedBeforeStart.inc({ dependency: opts.dependency });
        client.calls.inc({ dependency: opts.dependency, procedure: `/${req.service.typeName}/${req.method.name}`, code: "not_started" });
        return Promise.reject(
          markLocalRejection(
            refusalError(
              `${opts.dependency}: not called, only ${Math.max(0, budget)}ms left of the deadline (minimum ${opts.minBudgetMs}ms)`,
              Code.DeadlineExceeded,
              { reason: "DEADLINE_TOO_SHORT", metadata: { dependency: opts.dependency } },
            ),
            { kind: "budget_too_small", dependency: opts.dependency },
          ),
        );
      }
    }
    return next(req);
  };
}

/**
 * The outbound half of deadline propagation, on every downstream transport.
 *
 * Per attempt it sends the call's remaining budget (callDeadlineAt) as its
 * deadline (a budget that became too small in between still starts: the
 * dependency's own minimum check refuses it at no cost), forwards the
 * request id, criticality and caller, aborts the call when our caller goes
 * away or when the request's calls end (a hop reserve before our deadline,
 * when the dependency's own deadline passes too, so that this hop still has
 * the reserve to answer with what the dependency did not do), and maps the
 * outcome deliberately (see mapDownstreamError). It arms no timer: the
 * request's one deadline timer (request-context.ts) fires both.
 */
export function outboundInterceptor(opts: OutboundOptions): Interceptor {
  const client = rpcClientMetrics();
  const okCalls = okCallCells(client.calls);
  const durations = histogramCellsOf(client.duration, ["dependency", "procedure"]);
  return (next) => async (req) => {
    const procedure = procedureOf(req.method);
    const scope = currentScope();
    const callsEnd = scope?.callsEnd;
    let release = () => {};
    if (scope) {
      const budget = Math.floor(callDeadlineAt(req, scope, opts.hopReserveMs) - scope.clock.now());
      if (budget < 1) throw new ConnectError(`${opts.dependency}: not called, the deadline passed while waiting to start`, Code.DeadlineExceeded);
      setTimeoutHeader(req.header, budget);
      req.header.set(requestIdHeader, scope.requestId);
      if (scope.criticality) req.header.set(criticalityHeader, scope.criticality);
      if (scope.caller) req.header.set(callerHeader, scope.caller);
      if (scope.tenant) req.header.set(tenantHeader, scope.tenant);
      const call = linkedSignal(callsEnd ? [req.signal, scope.signal, callsEnd] : [req.signal, scope.signal]);
      release = call.release;
      req = { ...req, signal: call.signal };
    }
    const started = performance.now();
    // No span unless one is exported or a trace is passed on (tracing.ts).
    const span = clientSpanNeeded(scope)
      ? startClientSpan(scope, req.service.typeName, req.method.name, req.header, {
          "peer.service": opts.dependency,
          "retry.attempt": req.contextValues.get(attemptKey),
          ...(scope ? { "deadline.remaining_ms": Math.floor(remainingMs(scope)) } : {}),
        })
      : undefined;
    if (span?.isRecording()) {
      // Parsed only when spans are exported: a URL parse per call is not free.
      const url = new URL(req.url);
      span.setAttribute("server.address", url.hostname);
      if (url.port) span.setAttribute("server.port", Number(url.port));
    }
    let outcome: Code | "ok" = "ok";
    let failure: string | undefined;
    try {
      const spec = currentFaults().dependencies?.[opts.dependency];
      const fault = faultApplies(spec) ? spec : undefined;
      if (fault) {
        await injectedDelay(fault, req.signal);
        if (shouldFail(fault)) throw new ConnectError(`injected fault: call to ${opts.dependency} failed`, Code.Unavailable);
      }
      const res = await next(req);
      if (fault && shouldDropResponse(fault)) {
        throw new ConnectError(`injected fault: response from ${opts.dependency} lost`, Code.Unavailable);
      }
      okCalls.cell(opts.dependency, procedure).value++;
      if (res.stream) {
        // A stream is open, not over: it stays linked to our caller and our deadline until its
        // messages end, and a failure while they are read is mapped as one before them.
        const unlink = release;
        release = () => {};
        return onStreamEnd(
          mapStreamFailure(res, (e) => failedCall(e, opts.dependency, procedure, scope, callsEnd, client.calls)),
          unlink,
        );
      }
      return res;
    } catch (e) {
      const mapped = failedCall(e, opts.dependency, procedure, scope, callsEnd, client.calls);
      outcome = mapped.code;
      failure = mapped.rawMessage;
      throw mapped;
    } finally {
      release();
      if (span) endSpan(span, outcome, failure);
      durations.cell(opts.dependency, procedure).observe((performance.now() - started) / 1000);
    }
  };
}

/** A failed call's error as this hop's caller is to see it (mapDownstreamError), counted. */
function failedCall(
  e: unknown,
  dependency: string,
  procedure: string,
  scope: CallScope | undefined,
  callsEnd: AbortSignal | undefined,
  calls: ReturnType<typeof rpcClientMetrics>["calls"],
): ConnectError {
  const mapped = mapDownstreamError(e, {
    dependency,
    ownDeadlinePassed: callsEnd?.aborted === true || (scope !== undefined && abortReason(scope) === "deadline"),
    callerCancelled: scope !== undefined && (abortReason(scope) === "cancelled" || abortReason(scope) === "shutdown"),
  });
  calls.inc({ dependency, procedure, code: codeLabel(mapped.code) });
  return mapped;
}

const procedures = new WeakMap<object, string>();
/** "/package.Service/Method", built once per method (a metric label on every call). */
function procedureOf(method: UnaryRequest["method"] | StreamRequest["method"]): string {
  let p = procedures.get(method);
  if (p === undefined) {
    p = `/${method.parent.typeName}/${method.name}`;
    procedures.set(method, p);
  }
  return p;
}

/**
 * The signal of one call: aborts when a parent does. `release()` unhooks
 * the parents once the call is over.
 *
 * Not AbortSignal.any(): on Node 20 that leaks when a listener stays on the
 * combined signal (connect-node leaves one), and the leak keeps each
 * request's whole async context alive (about 150 MiB/min at 100 requests/s
 * in checkout; see docs/hardening.md).
 */
function linkedSignal(parents: AbortSignal[]): { signal: AbortSignal; release(): void } {
  const controller = new AbortController();
  const onAbort = (ev: Event) => controller.abort((ev.target as AbortSignal).reason);
  for (const p of parents) {
    if (p.aborted) controller.abort(p.reason);
    else p.addEventListener("abort", onAbort, { once: true });
  }
  return {
    signal: controller.signal,
    release() {
      for (const p of parents) p.removeEventListener("abort", onAbort);
    },
  };
}

/** Writes the deadline in the form of the transport's protocol. */
function setTimeoutHeader(header: Headers, ms: number): void {
  const contentType = header.get("content-type") ?? "";
  if (contentType.startsWith("application/grpc")) {
    header.set(grpcTimeoutHeader, formatGrpcTimeout(ms));
  } else {
    header.set(connectTimeoutHeader, formatConnectTimeout(ms));
  }
}
