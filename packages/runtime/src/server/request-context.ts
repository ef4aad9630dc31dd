import type * as http from "node:http";
import type * as http2 from "node:http2";
import { randomUUID } from "node:crypto";
import { Code, ConnectError, createContextKey, createContextValues, type ContextValues, type HandlerContext } from "@connectrpc/connect";
import {
  callsEndAt as callsEndAtOf,
  parseTimeoutHeader,
  resolveInboundDeadline,
  type CallScope,
  type Criticality,
  type InboundDeadline,
} from "@platform/resilience";
import { callerHeader, requestIdHeader, tenantHeader, timeoutHeaderOf, timeoutHeaders, type TimeoutHeader } from "../headers.js";

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

/** The Node request and response behind an RPC, for the code that still needs the transport (the caller's address, the request watchdog). */
export interface NodeExchange {
  req: Req;
  res: Res;
}

/**
 * Everything this hop knows about one request, built once, when its headers
 * arrive (serve()'s handler), and handed to the request gate, the
 * interceptors and the handler through Connect's context values
 * (`requestContext(ctx)`). Nothing per-request travels in request headers
 * inside the process; headers are for the wire (headers.ts).
 *
 * One request, three context objects, each for what the others cannot do:
 * - `RequestContext` (this): the server's record of the request, from its
 *   headers to its response's end: the deadline parsed once and its one
 *   timer, the request id, criticality, caller, trace headers, who writes
 *   its log line. It exists before Connect has parsed anything, so the
 *   request gate refuses with it before the body is read, and after the
 *   handler, for the log line.
 * - `CallScope` (@platform/resilience, in AsyncLocalStorage): what the
 *   handler's work inherits: the absolute deadline, the signal that ends
 *   it, the ids to pass on. Made by the deadline interceptor from this
 *   context (`scopeFor`). Code that is handed no context argument reads it
 *   with `currentScope()`: the dependency client's interceptors, the
 *   database, the logger's trace fields. It knows nothing of Connect or
 *   HTTP, so the database and resilience packages depend on neither.
 * - Connect's `HandlerContext`: the call as Connect hands it to a handler
 *   (headers, trailers, its signal) and the carrier of this context in its
 *   `values`. Not ours to change.
 * Folding this context into the scope would make the scope exist before
 * admission (a scope and its listeners for every refused request) and tie
 * the resilience package to the transport; so they stay apart.
 */
export interface RequestContext {
  /** performance.now() when the headers arrived: the origin of the deadline. */
  readonly arrivedAt: number;
  /** e.g. `/stock.v1.StockService/GetLevels`, from the request's path. */
  readonly procedure: string;
  /** The caller's x-request-id when well-formed, else a fresh one. */
  readonly requestId: string;
  /** The deadline this hop gives the request (the caller's, capped; or the default), in ms from arrival. */
  readonly timeoutMs: number;
  readonly deadlineSource: InboundDeadline["source"];
  /** arrivedAt + timeoutMs, on performance.now()'s scale. */
  readonly deadlineAt: number;
  /** Milliseconds left before deadlineAt (negative once past). Handlers read it where they would call Connect's `ctx.timeoutMs()`, which is undefined under serve(): Connect is given no timeout header (connect-adapter.ts). */
  remainingMs(): number;
  /**
   * Why a timeout header this request sent cannot be served, by header: not
   * in its wire format, or past what a timer can hold. The request gate
   * refuses the request when it is the header of the request's own
   * protocol (`timeoutRefusal`).
   */
  readonly invalidTimeouts: Readonly<Partial<Record<TimeoutHeader, string>>>;
  /**
   * Aborts with reason "deadline" at deadlineAt: this hop's one deadline
   * timer. The call scope, the admission queue entry and the request
   * watchdog all listen to it instead of arming their own.
   */
  readonly deadline: AbortSignal;
  /**
   * Aborts with reason "deadline" a hop reserve before the deadline: every
   * call this hop made to a dependency ends then, leaving the reserve to
   * answer our own caller with what the dependency did not do. Fired by the
   * same timer, re-armed once.
   */
  readonly callsEnd: AbortSignal;
  /** How expendable the work is; decided by the request gate (the edge assigns it, inner hops take the caller's). */
  criticality: Criticality;
  /** The caller's W3C trace context headers (observability/tracing.ts `requestTraceContext`). */
  readonly traceparent: string | undefined;
  readonly tracestate: string | undefined;
  /** Who the edge authenticated: set by the edge's gate, read from the wire at inner hops. */
  caller: string | undefined;
  /** The caller's tenant, decided like `caller`: by the edge's gate there, from the wire at inner hops. */
  tenant: string | undefined;
  /** Parks the request in admission control while it waits on a dependency (CallScope.park); set when admitted. */
  park?: () => () => void;
  /** True once the request was parked: it waited out a restart, and its answer says so (waitedOutRestartHeader). */
  waitedOutRestart: boolean;
  /** True once this request's log line is owned by someone (the gate's refusal, or the request log interceptor). */
  logged: boolean;
  /** The handler's call scope, once the deadline interceptor made it (for the interceptors outside it: the log line's trace ids). */
  scope: CallScope | undefined;
  /** Set when the request came through serve(). */
  readonly exchange: NodeExchange | undefined;
  /**
   * True once an adapter made the request's signal (Connect's `ctx.signal`)
   * abort with the server's shutdown too (createRpcAdapter does): the call
   * scope then needs no listener of its own on the shutdown signal.
   */
  shutdownInSignal: boolean;
  /** Clears the deadline timer; serve() calls it when the response closes. */
  dispose(): void;
}

export interface RequestContextInput {
  /** Reads one request header (lower-case name); undefined when absent. */
  header: (name: string) => string | undefined;
  procedure: string;
  arrivedAt: number;
  deadline: { defaultMs: number; maxMs: number; hopReserveMs?: number };
  /** Inner hops take the caller identity (caller and tenant) from the wire; the edge establishes its own (request gate) and ignores what a client sent. */
  trustCaller: boolean;
  exchange?: NodeExchange;
  /** The timeout-header parser; injectable so that a test can count how often it runs. */
  parse?: typeof parseTimeoutHeader;
  now?: () => number;
}

/**
 * Builds a request's context: parses its deadline header (the only parse of
 * it on this hop: serve() hands connect-node the request without it,
 * connect-adapter.ts), resolves the deadline from arrival and arms the one
 * timer that fires at it.
 */
/** performance.now, bound once (not per request). */
const performanceNow = () => performance.now();

export function createRequestContext(input: RequestContextInput): RequestContext {
  const now = input.now ?? performanceNow;
  const sent = timeoutFromHeaders(input.header, input.parse ?? parseTimeoutHeader);
  const resolved = resolveInboundDeadline({ headerMs: sent.ms, ...input.deadline });
  const deadlineAt = input.arrivedAt + resolved.timeoutMs;
  const callsEndAt = callsEndAtOf(deadlineAt, input.deadline.hopReserveMs ?? 0);
  const controller = new AbortController();
  const calls = new AbortController();
  // One timer at a time: first at the end of the calls, then (re-armed for
  // the hop reserve) at the deadline. Re-armed even when the deadline has
  // passed already (a timer that fired late: the process was starved or
  // paused): the calls' failures then settle first, a turn of the event
  // loop before the deadline ends the request, and the caller hears which
  // dependency did not answer rather than that the deadline passed
  // (late-deadline.spec.ts).
  let timer: NodeJS.Timeout;
  const atDeadline = () => controller.abort("deadline");
  const atCallsEnd = () => {
    calls.abort("deadline");
    arm(atDeadline, deadlineAt - now());
  };
  const arm = (fn: () => void, ms: number) => {
    timer = setTimeout(fn, Math.max(0, ms));
    timer.unref();
  };
  arm(atCallsEnd, callsEndAt - now());
  return {
    arrivedAt: input.arrivedAt,
    procedure: input.procedure,
    requestId: requestIdFrom(input.header(requestIdHeader)),
    timeoutMs: resolved.timeoutMs,
    deadlineSource: resolved.source,
    deadlineAt,
    remainingMs: () => deadlineAt - now(),
    invalidTimeouts: sent.invalid,
    deadline: controller.signal,
    // A plain property, not a lazy getter: an accessor in an object literal is defined through
    // V8's runtime on every creation, dearer than the controller it would save (context-cost.ts).
    callsEnd: calls.signal,
    criticality: "critical",
    traceparent: input.header("traceparent"),
    tracestate: input.header("tracestate"),
    caller: input.trustCaller ? input.header(callerHeader) : undefined,
    tenant: input.trustCaller ? input.header(tenantHeader) : undefined,
    logged: false,
    waitedOutRestart: false,
    scope: undefined,
    exchange: input.exchange,
    shutdownInSignal: false,
    dispose: () => clearTimeout(timer),
  };
}

/**
 * The largest deadline a Node timer can hold (2^31 - 1 ms; above it, timers
 * fire at once). A longer one is refused, as connect-node's `maxTimeoutMs`
 * refused it when it parsed the header itself; shorter ones are capped at
 * DEADLINE_MAX_MS.
 */
export const maxTimeoutMs = 2_147_483_647;

/**
 * The caller's deadline in ms (the first well-formed one of grpc-timeout and
 * connect-timeout-ms), or undefined when it sent none; and why any header it
 * sent cannot be served, in connect-node's own words (its parseTimeout of
 * protocol-grpc and protocol-connect), which callers and tests already know.
 * A malformed value counts as none for the deadline: the request gate
 * refuses the request when it is its own protocol's header.
 */
function timeoutFromHeaders(
  header: RequestContextInput["header"],
  parse: typeof parseTimeoutHeader,
): { ms: number | undefined; invalid: Partial<Record<TimeoutHeader, string>> } {
  let ms: number | undefined;
  const invalid: Partial<Record<TimeoutHeader, string>> = {};
  for (const name of timeoutHeaders) {
    const v = header(name);
    if (v === undefined) continue;
    const parsed = parse(name, v);
    if (!parsed.ok) invalid[name] = `protocol error: invalid ${name === "grpc-timeout" ? "grpc" : "connect"} timeout value: ${v}`;
    else if (parsed.ms > maxTimeoutMs) invalid[name] = `timeout ${parsed.ms}ms must be <= ${maxTimeoutMs}`;
    if (parsed.ok) ms ??= parsed.ms;
  }
  return { ms, invalid };
}

/**
 * The INVALID_ARGUMENT a request is refused with when the timeout header of
 * its own protocol (`protocolName`, Connect's: "grpc", "grpc-web",
 * "connect") cannot be served; the other protocol's header is ignored, as
 * connect-node ignores it.
 */
export function timeoutRefusal(context: RequestContext, protocolName: string): ConnectError | undefined {
  const message = context.invalidTimeouts[timeoutHeaderOf(protocolName)];
  return message === undefined ? undefined : new ConnectError(message, Code.InvalidArgument);
}

/**
 * Accepts a caller's request id only when it is short and printable, so a
 * hostile header can't inject into logs; otherwise mints a fresh one.
 */
export function requestIdFrom(value: string | null | undefined): string {
  if (value != null && /^[A-Za-z0-9._:-]{1,128}$/.test(value)) return value;
  return randomUUID();
}

/** Reads a header of a Node request (first value of a repeated one). */
export function nodeHeader(req: Req): (name: string) => string | undefined {
  return (name) => {
    const v = req.headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
}

/** Reads a header from a fetch Headers object. */
export function fetchHeader(headers: Headers): (name: string) => string | undefined {
  return (name) => headers.get(name) ?? undefined;
}

const requestContextKey = createContextKey<RequestContext | undefined>(undefined, { description: "platform request context" });

/** The request context of an RPC; undefined when it did not come through serve() (an in-memory transport in a unit test). */
export function requestContext(ctx: Pick<HandlerContext, "values">): RequestContext | undefined {
  return ctx.values.get(requestContextKey);
}

/**
 * The request context of an interceptor's request. A request that did not
 * come through serve() (an in-memory transport in a unit test) gets one
 * built here from its headers, arriving now, and kept in its context values
 * for the interceptors inside; `built` says the caller owns it (dispose it).
 */
export function requestContextOf(
  req: { contextValues: ContextValues; header: Headers; service: { typeName: string }; method: { name: string } },
  deadline: { defaultMs: number; maxMs: number },
): { context: RequestContext; built: boolean } {
  const given = req.contextValues.get(requestContextKey);
  if (given) return { context: given, built: false };
  const context = createRequestContext({
    header: fetchHeader(req.header),
    procedure: `/${req.service.typeName}/${req.method.name}`,
    arrivedAt: performance.now(),
    deadline,
    trustCaller: true,
  });
  req.contextValues.set(requestContextKey, context);
  return { context, built: true };
}

/** Context values carrying `context`, for a router transport in tests or any other adapter. */
export function requestContextValues(context: RequestContext | undefined, values: ContextValues = createContextValues()): ContextValues {
  return values.set(requestContextKey, context);
}
