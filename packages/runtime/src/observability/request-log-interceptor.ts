import { type Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { isServerFault } from "@platform/resilience";
import type { Logger } from "./logger.js";
import type { DeadlineConfig } from "../config/server-config.js";
import { cellsOf, histogramCellsOf } from "./metric-cells.js";
import { rpcServerMetrics } from "./metrics.js";
import { codeLabel } from "./code-label.js";
import { requestContextOf, type RequestContext } from "../server/request-context.js";
import { traceFields } from "./tracing.js";
import { isStream, onStreamEnd } from "../server/stream-messages.js";

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
  /** Writes the request's line and metrics; made once, not per request. */
  const finish = (
    context: RequestContext,
    built: boolean,
    inFlight: { value: number },
    started: number,
    code: Code | "ok",
    error: ConnectError | undefined,
    stream: boolean,
  ) => {
    if (built) context.dispose();
    inFlight.value--;
    const { procedure } = context;
    const codeName = codeLabel(code);
    const seconds = (performance.now() - started) / 1000;
    requestCells.cell(procedure, codeName).value++;
    // A stream's duration is how long it was watched, not how long work took: no latency sample for the intake controller.
    if (!stream) opts.onOutcome?.(code, seconds * 1000);
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
  };
  return (next) => async (req) => {
    const { context, built } = requestContextOf(req, opts.deadline);
    // This line is the request's: serve() writes none of its own.
    context.logged = true;
    const started = performance.now();
    const inFlight = inFlightCells.cell(context.procedure);
    inFlight.value++;
    let res: Awaited<ReturnType<typeof next>>;
    try {
      res = await next(req);
    } catch (e) {
      const error = ConnectError.from(e);
      finish(context, built, inFlight, started, error.code, error, req.stream);
      throw e;
    }
    if (!isStream(res)) {
      finish(context, built, inFlight, started, "ok", undefined, false);
      return res;
    }
    // A stream's line is written when it ends (stream-messages.ts).
    return onStreamEnd(res, (e) => {
      const error = e === undefined ? undefined : ConnectError.from(e);
      finish(context, built, inFlight, started, error ? error.code : "ok", error, true);
    });
  };
}
