import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { currentFaults, currentScope, faultApplies, injectedDelay, shouldFail } from "@platform/resilience";

/**
 * Runs the handler after the handler faults in force, if any (docs/faults.md):
 * an injected delay (ended early by the scope) and an injected failure. No
 * extra promise when there are none.
 */
export function faultInterceptor(): Interceptor {
  return (next) => (req) => {
    const fault = currentFaults().handler;
    if (!faultApplies(fault)) return next(req);
    return (async () => {
      await injectedDelay(fault, currentScope()?.signal ?? req.signal);
      if (shouldFail(fault)) throw new ConnectError("injected fault: handler failed", Code.Unavailable);
      return next(req);
    })();
  };
}
