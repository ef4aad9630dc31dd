import type * as http from "node:http";
import type * as http2 from "node:http2";
import { createContextKey, createContextValues, type ContextValues, type HandlerContext } from "@connectrpc/connect";

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

/**
 * The Node request and response behind an RPC, and when it arrived, for
 * the code Connect runs before the handler (the request gate) that still
 * needs the transport: the caller's address, and the request watchdog, which
 * bounds the body read Connect does without looking at the clock.
 */
export interface NodeExchange {
  req: Req;
  res: Res;
  /** performance.now() when the headers arrived. */
  arrivedAt: number;
}

const exchangeKey = createContextKey<NodeExchange | undefined>(undefined, { description: "node request and response" });

/**
 * connect-node's `contextValues` option only receives the request, so serve()
 * registers each exchange here just before it hands the request to the
 * adapter (which calls `contextValues` synchronously).
 */
export class NodeExchanges {
  private readonly byRequest = new WeakMap<Req, NodeExchange>();

  register(exchange: NodeExchange): void {
    this.byRequest.set(exchange.req, exchange);
  }

  /** For connectNodeAdapter's `contextValues` option. */
  readonly contextValues = (req: Req): ContextValues => createContextValues().set(exchangeKey, this.byRequest.get(req));
}

/** The exchange behind a handler context; undefined when the request did not come through serve(). */
export function nodeExchange(context: Pick<HandlerContext, "values">): NodeExchange | undefined {
  return context.values.get(exchangeKey);
}
