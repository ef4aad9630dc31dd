import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { currentScope } from "@platform/resilience";
import type { Logger } from "../observability/logger.js";
import { grpcRetryPushbackHeader, failedDependencyHeader, retryAfterHeader } from "../headers.js";
import { scopeEndedError, streamResumeHeader } from "../deadline/deadline-interceptor.js";
import { isStream, mapStreamFailure } from "./stream-messages.js";
import { requestContext } from "./request-context.js";

/**
 * Every failure leaves as a deliberate ConnectError (invariant 8,
 * docs/architecture.md). Unexpected exceptions are logged with their stack
 * and answered as INTERNAL without internals (a SQL error message is not
 * for the caller); an exception thrown because the scope ended is answered
 * as what ended it.
 */
export function errorInterceptor(opts: { logger: Logger }): Interceptor {
  // Promise callbacks rather than an async function: one promise and microtask less per request.
  return (next) => (req) => {
    let pending: ReturnType<typeof next>;
    try {
      pending = next(req);
    } catch (e) {
      pending = Promise.reject(e);
    }
    const deliberate = (e: unknown): never => {
      if (e instanceof ConnectError) throw freshError(e);
      const scope = currentScope();
      if (scope?.signal.aborted) throw scopeEndedError(scope);
      const requestId = requestContext({ values: req.contextValues })?.requestId ?? scope?.requestId ?? "unknown";
      opts.logger.error({ err: e, procedure: `/${req.service.typeName}/${req.method.name}`, requestId }, "unexpected error in handler");
      throw new ConnectError(`internal error (request id ${requestId})`, Code.Internal);
    };
    // A stream's failure comes while its messages are read, after this returned: mapped there too.
    if (req.stream) pending = pending.then((res) => (isStream(res) ? mapStreamFailure(res, deliberate) : res));
    return pending.catch(deliberate);
  };
}

/**
 * A fresh error with the same code, message and details: the request id
 * goes into its metadata, which connect-es would not send for an error
 * parsed from the wire (2.2+, #1717); only the pushback hint crosses the
 * hop with it, the mark of a refusal made below (failed-dependency.ts), and
 * a stream's resume hint.
 */
function freshError(e: ConnectError): ConnectError {
  const out = new ConnectError(e.rawMessage, e.code);
  out.details.push(...e.details);
  for (const [k, v] of e.metadata)
    if (k === retryAfterHeader || k === grpcRetryPushbackHeader || k === failedDependencyHeader || k === streamResumeHeader) out.metadata.set(k, v);
  return out;
}
