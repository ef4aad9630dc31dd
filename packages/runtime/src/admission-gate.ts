import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import {
  AdmissionController,
  parseTimeoutHeader,
  pushbackHeaders,
  systemClock,
  type Criticality,
  type IntakeController,
} from "@platform/resilience";
import { admissionMetrics } from "./metrics.js";
import { watchRequest } from "./request-watchdog.js";
import type { NodeExchange } from "./node-exchange.js";
import type { AdmissionConfig } from "./server-config.js";

export const criticalityHeader = "x-criticality";

/** Decides a request's criticality from its procedure and headers. */
export type CriticalityPolicy = (procedure: string, headers: Headers) => Criticality;

/**
 * Inner services trust the criticality their caller propagated (critical
 * when absent). The edge must not: it assigns one per method instead.
 */
export const propagatedCriticality: CriticalityPolicy = (_procedure, headers) =>
  headers.get(criticalityHeader) === "sheddable" ? "sheddable" : "critical";

export interface AdmissionGate {
  /**
   * Resolves once the request holds an admission slot (released when the
   * handler is done), or throws the refusal as a ConnectError with the
   * pushback hint in its metadata. Runs inside Connect's requestGate: after
   * the headers, before the body is read or parsed.
   */
  admit(context: HandlerContext, exchange: NodeExchange | undefined): Promise<void>;
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
  /** Deadline applied when the request carries none (ms). */
  defaultTimeoutMs: number;
  maxTimeoutMs: number;
  criticality: CriticalityPolicy;
  intake?: IntakeController;
  /** Told about every request our own queue refused (an overload signal for the intake controller). */
  onShed?: () => void;
}): AdmissionGate {
  const controller = new AdmissionController(opts.config);
  const metrics = admissionMetrics(controller);
  const clock = systemClock;

  return {
    controller,
    async admit(context, exchange) {
      const procedure = `/${context.service.typeName}/${context.method.name}`;
      const criticality = opts.criticality(procedure, context.requestHeader);
      // Inner hops read the (possibly re-assigned) criticality from here.
      context.requestHeader.set(criticalityHeader, criticality);
      if (opts.intake && !opts.intake.admit()) {
        metrics.shed.inc({ reason: "intake", criticality });
        throw new ConnectError("overloaded: intake reduced while the system recovers; retry later", Code.Unavailable, pushbackHeaders(1000));
      }
      const arrivedAt = exchange?.arrivedAt ?? clock.now();
      const deadline = arrivedAt + Math.min(inboundTimeoutMs(context.requestHeader) ?? opts.defaultTimeoutMs, opts.maxTimeoutMs);
      const { outcome, abandon } = controller.admit(criticality, deadline);
      // The caller left or the server is shutting down: free the place in the
      // queue. A passing deadline is left to the queue itself ("expired").
      const onAbort = () => {
        if (ConnectError.from(context.signal.reason).code !== Code.DeadlineExceeded) abandon();
      };
      context.signal.addEventListener("abort", onAbort, { once: true });
      const o = await outcome;
      context.signal.removeEventListener("abort", onAbort);
      if (!o.admitted) {
        metrics.shed.inc({ reason: o.reason, criticality });
        if (o.reason === "cancelled") throw ConnectError.from(context.signal.reason, Code.Canceled);
        opts.onShed?.();
        throw new ConnectError(o.message, o.code, o.pushbackMs === undefined ? {} : pushbackHeaders(o.pushbackMs));
      }
      metrics.admitted.inc({ criticality });
      metrics.queueWait.observe(o.waitedMs / 1000);
      // The handler is done (or the deadline passed, or the caller left):
      // Connect aborts the context's signal in every case.
      if (context.signal.aborted) o.release();
      else context.signal.addEventListener("abort", o.release, { once: true });
      // Bounds the body read and the answer's write too: see request-watchdog.ts.
      if (exchange) {
        exchange.res.once("close", o.release);
        watchRequest(exchange.req, exchange.res, deadline - clock.now());
      }
    },
  };
}

function inboundTimeoutMs(headers: Headers): number | undefined {
  for (const name of ["grpc-timeout", "connect-timeout-ms"] as const) {
    const v = headers.get(name);
    if (v === null) continue;
    const parsed = parseTimeoutHeader(name, v);
    if (parsed.ok) return parsed.ms;
  }
  return undefined;
}
