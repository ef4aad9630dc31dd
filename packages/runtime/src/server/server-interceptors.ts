import type { Code, Interceptor } from "@connectrpc/connect";
import type { Logger } from "../observability/logger.js";
import type { DeadlineConfig } from "../config/server-config.js";
import { deadlineInterceptor } from "../deadline/deadline-interceptor.js";
import { errorInterceptor } from "./error-interceptor.js";
import { faultInterceptor } from "../faults/fault-interceptor.js";
import { validationInterceptor } from "@platform/proto/validation";
import { requestIdInterceptor } from "./request-id-interceptor.js";
import { requestLogInterceptor } from "../observability/request-log-interceptor.js";
import { tracingInterceptor } from "../observability/tracing-interceptor.js";

/**
 * The interceptors every server runs around its handlers, one job each, by
 * role. serve() runs them in the order of `serverInterceptorOrder`; a
 * plug-in may replace any of them (plugin.ts).
 */
export interface ServerInterceptors {
  /** The request's log line and RPC metrics (request-log-interceptor.ts). */
  requestLog: Interceptor;
  /** x-request-id on every answer (request-id-interceptor.ts). */
  requestId: Interceptor;
  /** The call scope: deadline, cancellation, shutdown; the handler raced against it (deadline-interceptor.ts). */
  deadline: Interceptor;
  /** The server span (tracing-interceptor.ts). */
  tracing: Interceptor;
  /** Every failure as a deliberate ConnectError, internals hidden (error-interceptor.ts). */
  errors: Interceptor;
  /** The request's rules declared in the proto, checked before the handler runs (@platform/proto/validation). */
  validation: Interceptor;
  /** Injected handler faults (fault-interceptor.ts). */
  faults: Interceptor;
}

/** Outermost first: the log line sees what the caller gets; everything below the deadline runs in the call scope. */
export const serverInterceptorOrder = [
  "requestLog",
  "requestId",
  "deadline",
  "tracing",
  "errors",
  "validation",
  "faults",
] as const satisfies readonly (keyof ServerInterceptors)[];

export interface ServerInterceptorOptions {
  deadline: Pick<DeadlineConfig, "edge" | "defaultMs" | "maxMs">;
  logger: Logger;
  /** Aborts every in-flight request when the drain period of a shutdown ends. */
  shutdownSignal: AbortSignal;
  /** Aborts when a shutdown starts: server streams end then, with a resume hint (deadline-interceptor.ts). */
  streamsEndSignal?: AbortSignal;
  /** Told every request's outcome (the edge's intake controller listens). */
  onOutcome?: (code: Code | "ok", durationMs: number) => void;
}

/** The platform's server interceptors, by role. */
export function serverInterceptors(opts: ServerInterceptorOptions): ServerInterceptors {
  return {
    requestLog: requestLogInterceptor({ logger: opts.logger, deadline: opts.deadline, ...(opts.onOutcome ? { onOutcome: opts.onOutcome } : {}) }),
    requestId: requestIdInterceptor(),
    deadline: deadlineInterceptor({
      deadline: opts.deadline,
      logger: opts.logger,
      shutdownSignal: opts.shutdownSignal,
      ...(opts.streamsEndSignal ? { streamsEndSignal: opts.streamsEndSignal } : {}),
    }),
    tracing: tracingInterceptor(),
    errors: errorInterceptor({ logger: opts.logger }),
    validation: validationInterceptor(),
    faults: faultInterceptor(),
  };
}

/** The interceptors in the order they run, outermost first. */
export function inOrder(parts: ServerInterceptors): Interceptor[] {
  return serverInterceptorOrder.map((role) => parts[role]);
}
