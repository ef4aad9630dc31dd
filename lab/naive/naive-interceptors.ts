import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { currentScope, formatConnectTimeout, formatGrpcTimeout } from "@platform/resilience";
import { codeLabel, connectTimeoutHeader, grpcTimeoutHeader, mapDownstreamError, requestIdHeader, rpcClientMetrics } from "@platform/runtime";

/**
 * The storm lab's baseline: how most stacks call a dependency by default,
 * as the seed stories describe. Every hop retries 3 times with plain
 * exponential backoff (200 ms, 400 ms) on anything that looks transient,
 * timeouts included, with no budget, no jitter and no deadline; each
 * attempt gets the same fixed timeout, whatever the caller has left; and
 * nothing is cancelled when the caller goes away.
 */
export function naiveClientInterceptors(dependency: string, callTimeoutMs: number): Interceptor[] {
  const client = rpcClientMetrics();
  const retry: Interceptor = (next) => async (req) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await next(req);
      } catch (e) {
        const err = ConnectError.from(e);
        if (attempt >= naiveAttempts || !naiveRetryable.has(err.code)) throw err;
        await new Promise((r) => setTimeout(r, 200 * 2 ** (attempt - 1)));
      }
    }
  };
  const fixedTimeout: Interceptor = (next) => async (req) => {
    const procedure = `/${req.service.typeName}/${req.method.name}`;
    // Naive in its resilience, not in its logs: the request id travels on,
    // so every hop's work can be attributed to the user request behind it.
    const requestId = currentScope()?.requestId;
    if (requestId) req.header.set(requestIdHeader, requestId);
    const contentType = req.header.get("content-type") ?? "";
    if (contentType.startsWith("application/grpc")) req.header.set(grpcTimeoutHeader, formatGrpcTimeout(callTimeoutMs));
    else req.header.set(connectTimeoutHeader, formatConnectTimeout(callTimeoutMs));
    // One controller and timer per call, cleared when it settles (the
    // AbortSignal.any + AbortSignal.timeout pattern leaks on Node 20, see
    // packages/runtime/src/client/outbound-interceptor.ts).
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new ConnectError("naive call timeout", Code.DeadlineExceeded)), callTimeoutMs);
    const onCallerAbort = () => controller.abort(req.signal.reason);
    if (req.signal.aborted) onCallerAbort();
    else req.signal.addEventListener("abort", onCallerAbort, { once: true });
    const timedOut = () => controller.signal.aborted && !req.signal.aborted;
    try {
      const res = await next({ ...req, signal: controller.signal });
      client.calls.inc({ dependency, procedure, code: "ok" });
      return res;
    } catch (e) {
      const mapped = mapDownstreamError(e, { dependency, ownDeadlinePassed: timedOut(), callerCancelled: false });
      client.calls.inc({ dependency, procedure, code: codeLabel(mapped.code) });
      throw mapped;
    } finally {
      clearTimeout(timer);
      req.signal.removeEventListener("abort", onCallerAbort);
    }
  };
  return [retry, fixedTimeout];
}

/** Attempts per call at every naive hop (and per transaction at its databases). */
export const naiveAttempts = 3;

export const naiveRetryable = new Set<Code>([Code.Unavailable, Code.DeadlineExceeded, Code.Internal, Code.Unknown, Code.ResourceExhausted]);
