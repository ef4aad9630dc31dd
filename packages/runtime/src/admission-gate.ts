import type * as http from "node:http";
import type * as http2 from "node:http2";
import { Code } from "@connectrpc/connect";
import {
  AdmissionController,
  parseTimeoutHeader,
  pushbackHeaders,
  systemClock,
  type Criticality,
  type IntakeController,
} from "@platform/resilience";
import { admissionMetrics } from "./metrics.js";
import { writeRpcError } from "./error-response.js";
import { endUnreadBody, watchRequest } from "./request-watchdog.js";
import { isReflectionPath } from "./reflection.js";
import type { AdmissionConfig } from "./server-config.js";

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

export const criticalityHeader = "x-criticality";

/** Decides a request's criticality from its procedure and headers. */
export type CriticalityPolicy = (procedure: string, headers: Req["headers"]) => Criticality;

/**
 * Inner services trust the criticality their caller propagated (critical
 * when absent). The edge must not: it assigns one per method instead.
 */
export const propagatedCriticality: CriticalityPolicy = (_procedure, headers) =>
  headers[criticalityHeader] === "sheddable" ? "sheddable" : "critical";

export interface AdmissionGate {
  /** Admits the request (then calls `serve`) or answers it with an error. */
  handle(req: Req, res: Res, serve: () => void): void;
  controller: AdmissionController;
}

/**
 * Admission control and (at the edge) intake control in front of the
 * Connect adapter: decided from the headers alone, before the body is read
 * or parsed, so refusing work costs almost nothing. Health checks are never
 * queued or shed: a probe failing under load would get a busy instance
 * restarted, which is the opposite of help. Nor is server reflection: a
 * tool asking for the schema costs a table lookup.
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

  const refuse = (req: Req, res: Res, code: Code, message: string, pushbackMs: number | undefined) =>
    writeRpcError(req, res, code, message, pushbackMs === undefined ? {} : pushbackHeaders(pushbackMs));

  return {
    controller,
    handle(req, res, serve) {
      const procedure = (req.url ?? "/").split("?")[0]!;
      if (procedure.startsWith("/grpc.health.v1.Health/") || isReflectionPath(procedure)) {
        endUnreadBody(req, res);
        return serve();
      }
      const criticality = opts.criticality(procedure, req.headers);
      // Inner hops read the (possibly re-assigned) criticality from here.
      req.headers[criticalityHeader] = criticality;
      if (opts.intake && !opts.intake.admit()) {
        metrics.shed.inc({ reason: "intake", criticality });
        return refuse(req, res, Code.Unavailable, "overloaded: intake reduced while the system recovers; retry later", 1000);
      }
      const timeoutMs = Math.min(inboundTimeoutMs(req.headers) ?? opts.defaultTimeoutMs, opts.maxTimeoutMs);
      const deadline = clock.now() + timeoutMs;
      const { outcome, abandon } = controller.admit(criticality, deadline);
      res.once("close", abandon);
      void outcome.then((o) => {
        if (!o.admitted) {
          metrics.shed.inc({ reason: o.reason, criticality });
          if (o.reason === "cancelled") return;
          opts.onShed?.();
          refuse(req, res, o.code, o.message, o.pushbackMs);
          return;
        }
        metrics.admitted.inc({ criticality });
        metrics.queueWait.observe(o.waitedMs / 1000);
        res.once("close", o.release);
        serve();
        // Bounds the body read and the answer's write too: see request-watchdog.ts.
        watchRequest(req, res, deadline - clock.now());
      });
    },
  };
}

function inboundTimeoutMs(headers: Req["headers"]): number | undefined {
  for (const name of ["grpc-timeout", "connect-timeout-ms"] as const) {
    const v = headers[name];
    if (typeof v !== "string") continue;
    const parsed = parseTimeoutHeader(name, v);
    if (parsed.ok) return parsed.ms;
  }
  return undefined;
}
