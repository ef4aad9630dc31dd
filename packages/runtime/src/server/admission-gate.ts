import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { AdmissionController, type AdmissionOutcome, type Criticality, type IntakeController } from "@platform/resilience";
import { admissionMetrics } from "../observability/metrics.js";
import { cellsOf, histogramCellsOf } from "../observability/metric-cells.js";
import { watchRequest } from "./request-watchdog.js";
import type { RequestContext } from "./request-context.js";
import type { AdmissionConfig } from "../config/server-config.js";
import { criticalityHeader } from "../headers.js";
import type { StreamAdmission } from "./stream-admission.js";
import { refusalError, shedRefusalReason } from "../refusals.js";

/** Decides a request's criticality from its procedure and headers. */
export type CriticalityPolicy = (procedure: string, headers: Headers) => Criticality;

/**
 * Inner services trust the criticality their caller propagated (critical
 * when absent). The edge must not: it assigns one per method instead.
 */
export const propagatedCriticality: CriticalityPolicy = (_procedure, headers) => (headers.get(criticalityHeader) === "sheddable" ? "sheddable" : "critical");

export interface AdmissionGate {
  /**
   * Resolves once the request holds an admission slot (released when the
   * handler is done), or throws the refusal as a ConnectError with the
   * pushback hint in its metadata. Runs inside Connect's requestGate: after
   * the headers, before the body is read or parsed.
   */
  admit(context: HandlerContext, request: RequestContext): Promise<void>;
  controller: AdmissionController;
}

/**
 * Admission control and (at the edge) intake control, decided from the
 * headers alone, before the body is read or parsed, so refusing work costs
 * almost nothing. Connect writes the refusal in the caller's protocol.
 *
 * Timing: Connect starts the handler context's deadline when the headers are
 * parsed, before the gate, and reads the body only after the gate returns.
 * So the time spent queued here counts against the request's deadline (as it
 * must: the caller's clock runs too), and a queued request never starts a body
 * read. The queue entry carries the same deadline, counted from arrival, and
 * is dropped ("expired") when it passes.
 */
export function createAdmissionGate(opts: {
  config: AdmissionConfig;
  intake?: IntakeController;
  /** Told about every request our own queue refused (an overload signal for the intake controller). */
  onShed?: () => void;
  /**
   * Server streams' own class (stream-admission.ts), and who a stream's
   * caller is for its per-caller limit (undefined: only the process limit).
   */
  streams?: { admission: StreamAdmission; callerOf: (request: RequestContext) => string | undefined };
}): AdmissionGate {
  const controller = new AdmissionController(opts.config);
  const metrics = admissionMetrics(controller);
  // Every admitted request counts here, at every hop: in cells (metric-cells.ts).
  const admitted = cellsOf(metrics.admitted, ["criticality"]);
  const queueWait = histogramCellsOf(metrics.queueWait, []).cell();

  return {
    controller,
    async admit(context, request) {
      const { criticality, deadlineAt: deadline, exchange } = request;
      if (opts.intake && !opts.intake.admit()) {
        metrics.shed.inc({ reason: "intake", criticality });
        throw refusalError("overloaded: intake reduced while the system recovers; retry later", Code.Unavailable, {
          reason: "INTAKE_REDUCED",
          retryAfterMs: 1000,
        });
      }
      if (opts.streams && context.method.methodKind === "server_streaming") return admitStream(opts.streams, context, request);
      // Admitted (or refused as expired) at once, without a promise, a listener and a
      // microtask when nothing is queued: the common case; else through the queue.
      const o = controller.admitNow(deadline) ?? (await queued(controller, criticality, deadline, context.signal));
      if (!o.admitted) {
        metrics.shed.inc({ reason: o.reason, criticality });
        if (o.reason === "cancelled") throw ConnectError.from(context.signal.reason, Code.Canceled);
        opts.onShed?.();
        throw refusalError(o.message, o.code, {
          reason: shedRefusalReason(o.reason) ?? "SHED_OVERLOADED",
          ...(o.pushbackMs === undefined ? {} : { retryAfterMs: o.pushbackMs }),
        });
      }
      admitted.cell(criticality).value++;
      queueWait.observe(o.waitedMs / 1000);
      const park = o.park;
      request.park = () => {
        request.waitedOutRestart = true;
        return park();
      };
      // The handler is done (or the deadline passed, or the caller left):
      // Connect aborts the context's signal in every case.
      if (context.signal.aborted) o.release();
      else context.signal.addEventListener("abort", o.release, { once: true });
      // Bounds the body read and the answer's write too: see request-watchdog.ts.
      if (exchange) {
        exchange.res.once("close", o.release);
        watchRequest(exchange.req, exchange.res, request.deadline);
      }
    },
  };
}

/**
 * A stream takes a slot of its own class, never a unary one, for as long as
 * it is open. The watchdog bounds it by the stream's own deadline (its
 * lifetime when the caller gave none), so it never cuts a healthy stream.
 */
function admitStream(streams: NonNullable<Parameters<typeof createAdmissionGate>[0]["streams"]>, context: HandlerContext, request: RequestContext): void {
  const release = streams.admission.admit(streams.callerOf(request));
  if (context.signal.aborted) release();
  else context.signal.addEventListener("abort", release, { once: true });
  const { exchange } = request;
  if (exchange) {
    exchange.res.once("close", release);
    watchRequest(exchange.req, exchange.res, request.deadline);
  }
}

/** A place in the admission queue, given up when the caller leaves or the server shuts down. */
async function queued(controller: AdmissionController, criticality: Criticality, deadline: number, signal: AbortSignal): Promise<AdmissionOutcome> {
  const { outcome, abandon } = controller.admit(criticality, deadline);
  // The caller left or the server is shutting down: free the place in the
  // queue. A passing deadline is left to the queue itself ("expired").
  const onAbort = () => {
    if (ConnectError.from(signal.reason).code !== Code.DeadlineExceeded) abandon();
  };
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    return await outcome;
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}
