import * as http2 from "node:http2";
import { Code, ConnectError, createConnectRouter, type ConnectRouter, type ConnectRouterOptions } from "@connectrpc/connect";
import { universalRequestFromNodeRequest, universalResponseToNodeResponse, type ConnectNodeAdapterOptions } from "@connectrpc/connect-node";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import { timeoutHeaders } from "../headers.js";
import { requestContextValues, type RequestContext } from "./request-context.js";

/** connect-node's own request handler type (its request and response types are not exported by name). */
type NodeHandler = NonNullable<ConnectNodeAdapterOptions["fallback"]>;
type Req = Parameters<NodeHandler>[0];
type Res = Parameters<NodeHandler>[1];

export interface RpcAdapterOptions extends ConnectRouterOptions {
  routes: (router: ConnectRouter) => void;
  /** Answers a path that is no RPC of `routes`. */
  fallback: NodeHandler;
}

/** Hands one Node request, with the context serve() built for it, to Connect. */
export type RpcAdapter = (req: Req, res: Res, context: RequestContext) => void;

/**
 * connect-node's `connectNodeAdapter`, with the request's deadline handed
 * over already parsed (docs/architecture.md, "The deadline"): the request
 * context parsed the timeout header and armed the hop's one timer, so
 * Connect gets the request without its timeout headers (it neither parses
 * them again nor arms a second timer) and, as the request's signal, one
 * that also ends at the context's deadline. The handler's `ctx.signal`
 * therefore still aborts at the deadline (with the error Connect's own
 * timer gave it) and when the caller goes away; `ctx.timeoutMs()` is
 * undefined, the deadline is `requestContext(ctx)`.
 *
 * Built from connect-node's public adapter pieces
 * (`universalRequestFromNodeRequest`, `universalResponseToNodeResponse`),
 * line for line what `connectNodeAdapter` 2.3.0 does otherwise
 * (connect-compat.ts, item 6).
 */
export function createRpcAdapter(options: RpcAdapterOptions): RpcAdapter {
  // The shutdown signal is not handed to Connect, which would link every
  // request's context to it: one listener per request in flight on that one
  // signal, and EventTarget walks its whole list of listeners on every add and
  // remove (O(requests in flight) per request; at 32 clients, the largest
  // single item the platform added in the gateway's profile). Instead the
  // requests in flight are kept in a Set, and the shutdown aborts each one's
  // signal with the shutdown's reason, as Connect's link would have.
  const { shutdownSignal, ...routerOptions } = options;
  const router = createConnectRouter(routerOptions);
  options.routes(router);
  const paths = new Map<string, UniversalHandler>();
  for (const handler of router.handlers) paths.set(handler.requestPath, handler);
  const live = shutdownSignal ? liveRequests(shutdownSignal) : undefined;
  return (req, res, context) => {
    const handler = paths.get((req.url ?? "").split("?", 2)[0] ?? "");
    if (!handler) {
      options.fallback(req, res);
      return;
    }
    // connect-node ends the request's signal when the stream (HTTP/2) or the response
    // (HTTP/1.1) closes, after every request; see `closedCleanly`.
    const closing: NodeJS.EventEmitter = "stream" in req ? req : res;
    const listenersBefore = closing.listenerCount("close");
    const uReq = universalRequestFromNodeRequest(req, res, undefined, requestContextValues(context));
    // Deleted only when sent (Node's header object is a plain lookup; a delete on fetch's
    // Headers validates and searches even for a header that is not there).
    for (const name of timeoutHeaders) if (req.headers[name] !== undefined) uReq.header.delete(name);
    const signal = requestSignal(uReq.signal, context.deadline, live);
    uReq.signal = signal.signal;
    closedCleanly(req, closing, listenersBefore, signal.end);
    if (live) context.shutdownInSignal = true;
    handler(uReq)
      .then((uRes) => universalResponseToNodeResponse(uRes, res))
      .catch((reason: unknown) => {
        // As connectNodeAdapter: a request aborted by its caller is not a server failure.
        if (ConnectError.from(reason).code === Code.Aborted) return;
        console.error(`handler for rpc ${handler.method.name} of ${handler.service.typeName} failed`, reason);
      });
  };
}

/**
 * A signal that aborts as `callerGone` does (with its reason), or at
 * `deadline` with the reason Connect's own deadline timer gives
 * (`createDeadlineSignal`: DEADLINE_EXCEEDED "the operation timed out").
 * No timer: `deadline` is the request context's.
 */
export function endedAtDeadline(callerGone: AbortSignal, deadline: AbortSignal, live?: LiveRequests): AbortSignal {
  return requestSignal(callerGone, deadline, live).signal;
}

/** `endedAtDeadline`'s signal, and the function that ends it with a reason (closedCleanly). */
function requestSignal(callerGone: AbortSignal, deadline: AbortSignal, live?: LiveRequests): { signal: AbortSignal; end: (reason: unknown) => void } {
  const controller = new AbortController();
  const onCallerGone = () => end(callerGone.reason);
  const onDeadline = () => end(new ConnectError("the operation timed out", Code.DeadlineExceeded));
  function end(reason: unknown): void {
    callerGone.removeEventListener("abort", onCallerGone);
    deadline.removeEventListener("abort", onDeadline);
    live?.requests.delete(controller);
    controller.abort(reason);
  }
  if (callerGone.aborted) onCallerGone();
  else if (deadline.aborted) onDeadline();
  else if (live?.shutdownSignal.aborted) end(live.shutdownSignal.reason);
  else {
    callerGone.addEventListener("abort", onCallerGone, { once: true });
    deadline.addEventListener("abort", onDeadline, { once: true });
    live?.requests.add(controller);
  }
  return { signal: controller.signal, end };
}

/**
 * What a request's signal aborts with when its stream or response closed
 * without an error: the AbortError connect-node gives it then
 * (`abortController.abort()`: "This operation was aborted"), made once. That
 * happens after every request (the stream closes once the answer is out),
 * and a DOMException made per request captures a stack each time, the
 * largest self-time entry of a hop's profile (a few µs each); nothing reads
 * its stack.
 */
export const requestClosed = new DOMException("This operation was aborted", "AbortError");

/**
 * Replaces connect-node's close listener of this request (the one
 * `universalRequestFromNodeRequest` just added to `closing`) by one that, on a
 * clean close (HTTP/2: reset code NO_ERROR; HTTP/1.1: the request not
 * errored), ends the request's signal with `requestClosed` directly, and
 * otherwise runs connect-node's listener as it was (the reset code or the
 * request's error mapped to a ConnectError, which `endedAtDeadline` passes
 * on). When connect-node did not add exactly one listener, nothing is
 * replaced.
 */
function closedCleanly(req: Req, closing: NodeJS.EventEmitter, listenersBefore: number, end: (reason: unknown) => void): void {
  if (closing.listenerCount("close") !== listenersBefore + 1) return;
  const connectOnClose = closing.rawListeners("close")[listenersBefore] as (this: unknown) => void;
  closing.removeListener("close", connectOnClose);
  closing.once("close", () => {
    const clean = "stream" in req ? req.stream.rstCode === http2.constants.NGHTTP2_NO_ERROR : !req.errored;
    if (clean) end(requestClosed);
    else connectOnClose.call(closing);
  });
}

/** The requests in flight whose signals a shutdown aborts (createRpcAdapter). */
export interface LiveRequests {
  readonly shutdownSignal: AbortSignal;
  readonly requests: Set<AbortController>;
}

/**
 * One listener on `shutdownSignal` for all requests: when it aborts, every
 * request still in flight is aborted with its reason ("shutdown"), which
 * Connect passes on to the handler's context as its own link to the signal
 * did; a request arriving after it is aborted at once (endedAtDeadline).
 */
function liveRequests(shutdownSignal: AbortSignal): LiveRequests {
  const requests = new Set<AbortController>();
  shutdownSignal.addEventListener(
    "abort",
    () => {
      for (const controller of requests) controller.abort(shutdownSignal.reason);
      requests.clear();
    },
    { once: true },
  );
  return { shutdownSignal, requests };
}
