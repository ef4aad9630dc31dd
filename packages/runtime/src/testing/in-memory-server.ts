/**
 * One server interceptor (or a few) in front of a handler, in memory
 * (createRouterTransport): how each interceptor's spec calls it as a client
 * would, without a socket. The service is test.v1.Counter's unary Get
 * (Empty -> Empty).
 */
import { Writable } from "node:stream";
import { pino } from "pino";
import { createClient, createRouterTransport, type CallOptions, type HandlerContext, type Interceptor } from "@connectrpc/connect";
import { Counter } from "@platform/test-support";
import type { Logger } from "../observability/logger.js";

export type Handler = (ctx: HandlerContext) => Promise<object> | object;

/** A client of Get served by `handler` behind `interceptors` (outermost first). */
export function inMemoryGet(interceptors: Interceptor[], handler: Handler): (options?: CallOptions) => Promise<unknown> {
  const transport = createRouterTransport(
    (router) =>
      router.service(Counter, {
        get: (_req: unknown, ctx: HandlerContext) => handler(ctx),
        async *count() {},
      } as never),
    { router: { interceptors } },
  );
  const client = createClient(Counter, transport) as unknown as { get(req: object, options?: CallOptions): Promise<unknown> };
  return (options) => client.get({}, options);
}

/** A pino logger whose lines (parsed) land in `lines`. */
export function capturingLogger(): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const logger = pino(
    { level: "debug" },
    new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString().split("\n")) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
        done();
      },
    }),
  );
  return { logger, lines };
}
