import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { currentScope, remainingMs } from "@platform/resilience";
import { requestContext } from "../server/request-context.js";
import { endSpan, serverSpanNeeded, startServerSpan, withServerSpanActive } from "./tracing.js";
import { isStream, onStreamEnd } from "../server/stream-messages.js";

/**
 * The request's server span (OpenTelemetry; exported only when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set), parented on the caller's trace
 * context, with the deadline it was given; every client span and SQL
 * statement span below is its child. Runs inside the call scope.
 */
export function tracingInterceptor(): Interceptor {
  return (next) => async (req) => {
    const scope = currentScope();
    if (!scope || !serverSpanNeeded()) return next(req);
    const context = requestContext({ values: req.contextValues });
    const span = startServerSpan(scope, req.header, req.service.typeName, req.method.name, {
      ...(context ? { "deadline.timeout_ms": context.timeoutMs, "deadline.source": context.deadlineSource } : {}),
      "deadline.remaining_ms": Math.floor(remainingMs(scope)),
      "request.id": scope.requestId,
      ...(scope.caller ? { "enduser.id": scope.caller } : {}),
      ...(scope.tenant ? { "platform.tenant": scope.tenant } : {}),
    });
    let code: Code | "ok" = Code.Unknown;
    let message: string | undefined;
    let streaming = false;
    try {
      const res = await withServerSpanActive(scope, () => next(req));
      code = "ok";
      if (!isStream(res)) return res;
      // A stream's span lasts until its last message.
      streaming = true;
      return onStreamEnd(res, (e) => {
        const error = e === undefined ? undefined : ConnectError.from(e);
        endSpan(span, error ? error.code : "ok", error?.rawMessage);
      });
    } catch (e) {
      const error = ConnectError.from(e);
      code = error.code;
      message = error.rawMessage;
      throw e;
    } finally {
      if (!streaming) endSpan(span, code, message);
    }
  };
}
