import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { abortReason, createScope, remainingMs, runInScope, setScopeTelemetry, type CallScope } from "@platform/resilience";
import type { Logger } from "../observability/logger.js";
import type { DeadlineConfig } from "../config/server-config.js";
import { deadlineMetrics } from "../observability/metrics.js";
import { cellsOf, histogramCellsOf } from "../observability/metric-cells.js";
import { requestContextOf, type RequestContext } from "../server/request-context.js";
import { requestTraceContext, serverSpanNeeded, traceFields } from "../observability/tracing.js";
import { isStream } from "../server/stream-messages.js";
import { refusalError } from "../refusals.js";

export interface DeadlineInterceptorOptions {
  deadline: Pick<DeadlineConfig, "edge" | "defaultMs" | "maxMs">;
  logger: Logger;
  /** Aborts every in-flight request when the drain period of a shutdown ends. */
  shutdownSignal: AbortSignal;
  /**
   * Aborts when a shutdown starts: server streams end then, with a resume
   * hint, rather than run into the drain deadline (streams never drain by
   * themselves).
   */
  streamsEndSignal?: AbortSignal;
}

/**
 * The inbound half of deadline propagation (invariants 1 and 3,
 * docs/architecture.md): runs the handler in a CallScope whose signal ends
 * at the request's deadline (the request context's one timer), when the
 * caller goes away or when the server shuts down, so that every downstream
 * call and SQL statement below inherits the budget without handlers passing
 * anything by hand.
 *
 * A handler that ignores its signal still answers at the deadline: the
 * interceptor races it, answers DEADLINE_EXCEEDED (or CANCELLED, or
 * UNAVAILABLE at shutdown), and counts the work that finishes later as work
 * nobody waited for.
 */
export function deadlineInterceptor(opts: DeadlineInterceptorOptions): Interceptor {
  const late = deadlineMetrics().finishedAfterDeadline;
  const count = inboundDeadlineCounter(opts);
  return (next) => async (req) => {
    const { context, built } = requestContextOf(req, opts.deadline);
    // Through serve(), Connect's signal already aborts at shutdown (connect-adapter.ts): a
    // listener per request on the one shutdown signal would cost a walk of all the others'.
    const parents = context.shutdownInSignal ? [req.signal] : [req.signal, opts.shutdownSignal];
    if (req.stream && opts.streamsEndSignal) parents.push(opts.streamsEndSignal);
    const scope = scopeFor(context, parents);
    count(context);
    let streaming = false;
    try {
      const res = await runInScope(scope, () => raceScope(next(req), scope, () => late.inc({ procedure: context.procedure })));
      if (!isStream(res)) return res;
      // A stream's scope lasts until its last message.
      streaming = true;
      return {
        ...res,
        message: messagesInScope(res.message, scope, () => {
          scope.dispose();
          if (built) context.dispose();
        }),
      };
    } finally {
      if (!streaming) {
        scope.dispose();
        if (built) context.dispose();
      }
    }
  };
}

/**
 * A server stream's messages, each produced in the call scope (the
 * handler's generator runs when Connect asks for its next message, outside
 * the interceptor: without this it would see no deadline, no request id, no
 * cancellation) and raced against it, as a unary handler is: at the
 * deadline, when the caller leaves or the server shuts down, the stream ends
 * at once with the scope's error, whatever the handler is waiting for.
 */
async function* messagesInScope<M>(messages: AsyncIterable<M>, scope: CallScope, end: () => void): AsyncGenerator<M> {
  const it = runInScope(scope, () => messages[Symbol.asyncIterator]());
  let finished = false;
  try {
    for (;;) {
      const r = await runInScope(scope, () => raceScope(it.next(), scope, () => {}, streamEndedError));
      if (r.done) {
        finished = true;
        return;
      }
      yield r.value;
    }
  } finally {
    end();
    // Ends the handler's generator (its finally blocks run) once its pending step settles: it watches its signal.
    if (!finished) it.return?.(undefined).catch(() => {});
  }
}

/**
 * The request's call scope: its deadline and ids from the request context
 * (no timer of its own), ended by `parentSignals` too, and, on a hop that
 * exports no spans, the request's trace context (the caller's or a new
 * one: observability/tracing.ts `requestTraceContext`). Recorded on the
 * context for the interceptors outside it (the log line's trace ids).
 */
export function scopeFor(context: RequestContext, parentSignals: AbortSignal[]): CallScope & { dispose(): void } {
  const scope = createScope({
    timeoutMs: context.timeoutMs,
    startedAt: context.arrivedAt,
    deadlineSignal: context.deadline,
    callsEnd: context.callsEnd,
    requestId: context.requestId,
    procedure: context.procedure,
    criticality: context.criticality,
    caller: context.caller,
    tenant: context.tenant,
    ...(context.park ? { park: context.park } : {}),
    restartMark: context,
    parentSignals,
  });
  if (!serverSpanNeeded()) setScopeTelemetry(scope, requestTraceContext(context));
  context.scope = scope;
  return scope;
}

/**
 * Counts where the request's deadline came from (invariant 1,
 * docs/architecture.md): a missing one is normal at the edge (browsers,
 * curl) and a propagation bug below it, which is also logged; a capped one
 * is counted.
 */
export function countInboundDeadline(context: RequestContext, opts: Pick<DeadlineInterceptorOptions, "deadline" | "logger">): void {
  inboundDeadlineCounter(opts)(context);
}

/**
 * `countInboundDeadline` with its metrics looked up once: the missing
 * deadlines (every request at the edge) and the remaining time at arrival
 * (every request at every hop) are counted in cells (metric-cells.ts).
 */
export function inboundDeadlineCounter(opts: Pick<DeadlineInterceptorOptions, "deadline" | "logger">): (context: RequestContext) => void {
  const dl = deadlineMetrics();
  const missing = cellsOf(dl.missing, ["procedure"]);
  const remaining = histogramCellsOf(dl.remainingAtArrival, ["procedure"]);
  return (context) => {
    const { procedure } = context;
    if (context.deadlineSource === "default") {
      missing.cell(procedure).value++;
      if (!opts.deadline.edge)
        opts.logger.warn(
          { ...traceFields(context.scope), procedure, requestId: context.requestId, fallbackMs: context.timeoutMs },
          "request arrived without a deadline; applied the fallback",
        );
    } else if (context.deadlineSource === "capped") {
      dl.capped.inc({ procedure });
    }
    remaining.cell(procedure).observe(context.timeoutMs / 1000);
  };
}

/**
 * Settles with the handler, or with DEADLINE_EXCEEDED / CANCELLED /
 * UNAVAILABLE as soon as the scope aborts, whichever is first. `onLate` is
 * told when the handler finished after that (or past the deadline anyway).
 */
function raceScope<T>(work: Promise<T>, scope: CallScope, onLate: () => void, ended: (scope: CallScope) => ConnectError = scopeEndedError): Promise<T> {
  if (scope.signal.aborted) {
    work.catch(() => {});
    return Promise.reject(ended(scope));
  }
  return new Promise<T>((resolve, reject) => {
    let answered = false;
    const onAbort = () => {
      answered = true;
      reject(ended(scope));
    };
    scope.signal.addEventListener("abort", onAbort, { once: true });
    const settle = () => {
      scope.signal.removeEventListener("abort", onAbort);
      if (answered || remainingMs(scope) < 0) onLate();
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

/**
 * What a stream's caller is told when its scope ended before the stream
 * did: with a resume hint (the `stream-resume` trailer, and the message), as
 * a stream with no deadline of its own ends at its lifetime's end, and every
 * stream at a shutdown.
 */
export function streamEndedError(scope: CallScope): ConnectError {
  const resume = { [streamResumeHeader]: "resume-after-last-position" };
  switch (abortReason(scope)) {
    case "deadline":
      return new ConnectError(
        "stream deadline reached (the caller's deadline or the stream lifetime); reconnect and resume after the last position received",
        Code.DeadlineExceeded,
        resume,
      );
    case "shutdown":
      return new ConnectError("server is shutting down; reconnect and resume after the last position received", Code.Unavailable, resume);
    default:
      return new ConnectError("stream cancelled by the caller", Code.Canceled);
  }
}

/** The trailer that tells a stream's caller it may reconnect and resume where it was (docs/streams.md). */
export const streamResumeHeader = "stream-resume";

/** What the caller is told when the scope ended before the handler did. */
export function scopeEndedError(scope: CallScope): ConnectError {
  switch (abortReason(scope)) {
    case "deadline":
      return new ConnectError("deadline exceeded before the request completed", Code.DeadlineExceeded);
    case "shutdown":
      return refusalError("server is shutting down; retry on another instance", Code.Unavailable, { reason: "SHUTTING_DOWN" });
    default:
      return new ConnectError("request cancelled by the caller", Code.Canceled);
  }
}
