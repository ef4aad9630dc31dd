/**
 * test.v1.Counter's unary Get behind serve() on a real port (h2c for
 * "grpc", HTTP/1.1 for "connect-http1"): the socket counterpart of
 * in-memory-server.ts, for specs about what serve() itself does with a
 * request (its end, its deadline timer).
 */
import type { HandlerContext } from "@connectrpc/connect";
import { Counter } from "@platform/test-support";
import { readEnv } from "../config/config.js";
import { createLogger } from "../observability/logger.js";
import { type RunningServer, serve } from "../server/serve.js";
import { readServerConfig, type ServerConfig } from "../config/server-config.js";

export type Protocol = "grpc" | "connect-http1";

/** The server config of a spec's server named `name`, on free ports, with `env` on top. */
export function specServerConfig(name: string, env: Record<string, string> = {}): ServerConfig {
  return readEnv({ PORT: "0", ADMIN_PORT: "0", ...env }, (r) => readServerConfig(r, name, { port: 0, adminPort: 0, edge: false }));
}

/** Serves Get with `get` under serve(), silently logged; resolves once it listens. */
export async function serveGet(protocol: Protocol, config: ServerConfig, get: (ctx: HandlerContext) => Promise<object> | object): Promise<RunningServer> {
  const server = await serve({
    config,
    logger: createLogger(config.serviceName, "silent"),
    services: [Counter],
    http1: protocol === "connect-http1",
    routes(router) {
      router.service(Counter, { get: (_req: unknown, ctx: HandlerContext) => get(ctx), async *count() {} } as never);
    },
  });
  await server.ready;
  return server;
}
