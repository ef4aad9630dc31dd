import type { Interceptor } from "@connectrpc/connect";
import { remainingMs, runInScope } from "@platform/resilience";
import { deadlineMetrics, requestContextOf, type Logger, type ServerConfig } from "@platform/runtime";
import { countInboundDeadline, scopeFor } from "@platform/runtime/testing";

/**
 * The naive stack's replacement for the platform's deadline interceptor:
 * the handler runs inside a call scope (so logs and metrics still name the
 * request and its deadline), but to completion. It does not notice its
 * caller leaving (only a shutdown ends it) and is not raced against the
 * deadline; work that ends past the caller's deadline is still counted as
 * late, as the platform counts it.
 */
export function naiveDeadlineInterceptor(opts: { deadline: ServerConfig["deadline"]; logger: Logger; shutdownSignal: AbortSignal }): Interceptor {
  const late = deadlineMetrics().finishedAfterDeadline;
  return (next) => async (req) => {
    const { context, built } = requestContextOf(req, opts.deadline);
    const scope = scopeFor(context, [opts.shutdownSignal]);
    countInboundDeadline(context, opts);
    try {
      return await runInScope(scope, () => next(req));
    } finally {
      if (remainingMs(scope) < 0) late.inc({ procedure: context.procedure });
      scope.dispose();
      if (built) context.dispose();
    }
  };
}
