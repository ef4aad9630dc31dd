/**
 * The end of a shutdown's drain period aborts every request still in
 * flight with the reason "shutdown": the handler's `ctx.signal` and its
 * call scope end, and the caller is answered UNAVAILABLE (retry elsewhere).
 * serve() no longer links each request to the shutdown signal by a listener
 * of its own (connect-adapter.ts `liveRequests`): this is what guards that
 * the requests in flight are still reached, over gRPC (HTTP/2) and Connect
 * over HTTP/1.1.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { abortReason, currentScope } from "@platform/resilience";
import { Counter } from "@platform/test-support";
import { readEnv } from "./config.js";
import { createLogger } from "./logger.js";
import { serve } from "./serve.js";
import { readServerConfig } from "./server-config.js";

for (const protocol of ["grpc", "connect-http1"] as const) {
  test(`${protocol}: a request still running when the drain period ends is aborted with "shutdown" and answered UNAVAILABLE`, async () => {
    const env = { PORT: "0", ADMIN_PORT: "0", DRAIN_TIMEOUT_MS: "100" };
    const config = readEnv(env, (r) => readServerConfig(r, "drain-test", { port: 0, adminPort: 0, edge: false }));
    const seen: { signalReason?: unknown; scopeReason?: string } = {};
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const server = await serve({
      config,
      logger: createLogger("drain-test", "silent"),
      services: [Counter],
      http1: protocol === "connect-http1",
      routes(router) {
        router.service(Counter, {
          get: (_req: unknown, ctx: { signal: AbortSignal }) =>
            new Promise((resolve) => {
              const scope = currentScope();
              started();
              // Ignores the abort for the answer (the deadline interceptor answers), records what it saw.
              ctx.signal.addEventListener("abort", () => {
                seen.signalReason = ctx.signal.reason;
                seen.scopeReason = scope && abortReason(scope);
                setTimeout(() => resolve({}), 50);
              });
            }),
          async *count() {},
        } as never);
      },
    });
    await server.ready;
    const baseUrl = `http://127.0.0.1:${server.port}`;
    const transport = protocol === "grpc" ? createGrpcTransport({ baseUrl }) : createConnectTransport({ baseUrl, httpVersion: "1.1" });
    const client = createClient(Counter, transport) as unknown as { get(req: object): Promise<unknown> };
    const call = client.get({}).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    await running;
    await server.shutdown("test");
    const error = await call;
    assert.equal(error?.code, Code.Unavailable, `answered ${error?.message}`);
    assert.match(error.rawMessage, /shutting down/);
    assert.equal(seen.signalReason, "shutdown");
    assert.equal(seen.scopeReason, "shutdown");
  });
}
