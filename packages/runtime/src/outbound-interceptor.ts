import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { abortReason, markLocalRejection, currentFaults, currentScope, injectedDelay, shouldFail, formatConnectTimeout, formatGrpcTimeout, remainingMs } from "@platform/resilience";
import { deadlineMetrics, rpcClientMetrics } from "./metrics.js";
import { mapDownstreamError } from "./downstream-error.js";
import { requestIdHeader } from "./request-id.js";
import { codeLabel } from "./code-label.js";

export interface OutboundOptions {
  /** Dependency name used in messages and metric labels, e.g. "pricing". */
  dependency: string;
  /** Kept back from the remaining time so this hop can still write its own response. */
  hopReserveMs: number;
  /** Below this remaining budget the call is not started at all. */
  minBudgetMs: number;
}

/**
 * The outbound half of deadline propagation, on every downstream transport.
 *
 * Per attempt it sends the remaining time (minus the hop reserve) as the
 * call's deadline, aborts the call when our own caller goes away or that
 * deadline passes, refuses to start when too little time is left, forwards
 * the request id, and maps the outcome deliberately (see mapDownstreamError).
 */
export function outboundInterceptor(opts: OutboundOptions): Interceptor {
  const client = rpcClientMetrics();
  const dl = deadlineMetrics();
  return (next) => async (req) => {
    const procedure = `/${req.service.typeName}/${req.method.name}`;
    const scope = currentScope();
    let ownTimeout: AbortSignal | undefined;
    if (scope) {
      const budget = Math.floor(remainingMs(scope) - opts.hopReserveMs);
      if (budget < opts.minBudgetMs) {
        dl.rejectedBeforeStart.inc({ dependency: opts.dependency });
        client.calls.inc({ dependency: opts.dependency, procedure, code: "not_started" });
        // Our budget, not the dependency's health: a breaker must not count it.
        throw markLocalRejection(
          new ConnectError(`${opts.dependency}: not called, only ${Math.max(0, budget)}ms left of the deadline (minimum ${opts.minBudgetMs}ms)`, Code.DeadlineExceeded),
          { kind: "budget_too_small", dependency: opts.dependency },
        );
      }
      setTimeoutHeader(req.header, budget);
      req.header.set(requestIdHeader, scope.requestId);
      if (scope.criticality) req.header.set("x-criticality", scope.criticality);
      ownTimeout = AbortSignal.timeout(budget);
      req = { ...req, signal: AbortSignal.any([req.signal, scope.signal, ownTimeout]) };
    }
    const started = performance.now();
    try {
      const fault = currentFaults().dependencies?.[opts.dependency];
      if (fault) {
        await injectedDelay(fault, req.signal);
        if (shouldFail(fault)) throw new ConnectError(`injected fault: call to ${opts.dependency} failed`, Code.Unavailable);
      }
      const res = await next(req);
      client.calls.inc({ dependency: opts.dependency, procedure, code: "ok" });
      return res;
    } catch (e) {
      const mapped = mapDownstreamError(e, {
        dependency: opts.dependency,
        ownDeadlinePassed: ownTimeout?.aborted === true || (scope !== undefined && abortReason(scope) === "deadline"),
        callerCancelled: scope !== undefined && (abortReason(scope) === "cancelled" || abortReason(scope) === "shutdown"),
      });
      client.calls.inc({ dependency: opts.dependency, procedure, code: codeLabel(mapped.code) });
      throw mapped;
    } finally {
      client.duration.observe({ dependency: opts.dependency, procedure }, (performance.now() - started) / 1000);
    }
  };
}

/** Writes the deadline in the form of the transport's protocol. */
function setTimeoutHeader(header: Headers, ms: number): void {
  const contentType = header.get("content-type") ?? "";
  if (contentType.startsWith("application/grpc")) {
    header.set("grpc-timeout", formatGrpcTimeout(ms));
  } else {
    header.set("connect-timeout-ms", formatConnectTimeout(ms));
  }
}
