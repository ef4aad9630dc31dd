import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { isServerFault } from "@platform/resilience";
import type { Logger } from "./logger.js";
import type { DeadlineConfig } from "../config/server-config.js";
import { cellsOf, histogramCellsOf } from "./metric-cells.js";
import { rpcServerMetrics } from "./metrics.js";
import { codeLabel } from "./code-label.js";
import { requestContextOf } from "../server/request-context.js";
import { traceFields } from "./tracing.js";

/**
 * The request's one log line and its RPC metrics (requests, duration, in
 * flight), written when it ends, whatever ended it; outermost, so it sees
 * the answer the caller gets. Failures of the server's own making (INTERNAL,
 * UNKNOWN, DATA_LOSS, UNAVAILABLE) are logged at warn.
 */
export function requestLogInterceptor(opts: {
  logger: Logger;
  /** For a request that did not come through serve() (in-memory transports). */
  deadline: Pick<DeadlineConfig, "defaultMs" | "maxMs">;
  /** Told every request's outcome (the edge's intake controller listens). */
  onOutcome?: (code: Code | "ok", durationMs: number) => void;
}): Interceptor {
  const rpc = rpcServerMetrics();
  const requestCells = cellsOf(rpc.requests, ["procedure", "code"]);
  const inFlightCells = cellsOf(rpc.inFlight, ["procedure"]);
  const durationCells = histogramCellsOf(rpc.duration, ["procedure", "code"]);
  return (next) => async (req) => {
    const { context, built } = requestContextOf(req, opts.deadline);
    // This line is the request's: serve() writes none of its own.
    context.logged = true;
    const { procedure } = context;
    const started = performance.now();
    const inFlight = inFlightCells.cell(procedure);
    inFlight.value++;
    let code: Code | "ok" = Code.Unknown;
    let error: ConnectError | undefined;
    try {
      const res = await next(req);
      code = "ok";
      return res;
    } catch (e) {
      error = ConnectError.from(e);
      code = error.code;
      throw e;
    } finally {
      if (built) context.dispose();
      inFlight.value--;
      const codeName = codeLabel(code);
      const seconds = (performance.now() - started) / 1000;
      requestCells.cell(procedure, codeName).value++;
      opts.onOutcome?.(code, seconds * 1000);
      durationCells.cell(procedure, codeName).observe(seconds);
      // Built by assignment, in the order the line has always had: object spreads cost an
      // allocation and a copy each, on every request at every hop.
      const line: Record<string, unknown> = { procedure, code: codeName, durationMs: Math.round(seconds * 1000 * 10) / 10, requestId: context.requestId };
      if (context.scope) Object.assign(line, traceFields(context.scope));
      if (context.caller) line.caller = context.caller;
      if (context.tenant) line.tenant = context.tenant;
      line.deadlineMs = context.timeoutMs;
      line.deadlineSource = context.deadlineSource;
      if (error) line.error = error.rawMessage;
      if (error && isServerFault(error.code)) opts.logger.warn(line, "rpc");
      else opts.logger.info(line, "rpc");
    }
  };
}
