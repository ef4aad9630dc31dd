/**
 * How a request's signal ends under serve() (connect-adapter.ts).
 *
 * The end of a shutdown's drain period aborts every request still in
 * flight with the reason "shutdown": the handler's `ctx.signal` and its
 * call scope end, and the caller is answered UNAVAILABLE (retry elsewhere).
 * serve() no longer links each request to the shutdown signal by a listener
 * of its own (connect-adapter.ts `liveRequests`): this is what guards that
 * the requests in flight are still reached, over gRPC (HTTP/2) and Connect
 * over HTTP/1.1.
 *
 * A request whose caller resets its stream (HTTP/2 CANCEL) or drops its
 * connection (HTTP/1.1) while the handler runs: the handler's signal ends
 * with connect-node's own reason (a ConnectError CANCELED for the reset);
 * only a stream or response that closed cleanly ends it with the shared
 * AbortError (`requestClosed`).
 */
import assert from "node:assert/strict";
import * as http from "node:http";
import * as http2 from "node:http2";
import { test } from "node:test";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { abortReason, currentScope } from "@platform/resilience";
import { Counter } from "@platform/test-support";
import { serveGet, specServerConfig } from "../testing/served-get.js";

for (const protocol of ["grpc", "connect-http1"] as const) {
  test(`${protocol}: a request still running when the drain period ends is aborted with "shutdown" and answered UNAVAILABLE`, async () => {
    const seen: { signalReason?: unknown; scopeReason?: string } = {};
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const server = await serveGet(
      protocol,
      specServerConfig("drain-test", { DRAIN_TIMEOUT_MS: "100" }),
      (ctx) =>
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
    );
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

for (const protocol of ["grpc", "connect-http1"] as const) {
  test(`${protocol}: the caller going away mid-request ends the handler's signal with connect-node's reason`, async (t) => {
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    let aborted!: (reason: unknown) => void;
    const reason = new Promise<unknown>((r) => (aborted = r));
    const server = await serveGet(
      protocol,
      specServerConfig("cancel-test"),
      (ctx) =>
        new Promise((resolve) => {
          ctx.signal.addEventListener("abort", () => {
            aborted(ctx.signal.reason);
            resolve({});
          });
          started();
        }),
    );
    t.after(() => server.shutdown());
    if (protocol === "grpc") {
      const session = http2.connect(`http://127.0.0.1:${server.port}`);
      session.on("error", () => {});
      const stream = session.request({ ":method": "POST", ":path": "/test.v1.Counter/Get", "content-type": "application/grpc", te: "trailers" });
      stream.on("error", () => {});
      stream.end(Buffer.from([0, 0, 0, 0, 0]));
      await running;
      stream.close(http2.constants.NGHTTP2_CANCEL);
      const r = await reason;
      assert.ok(r instanceof ConnectError, `ended with ${String(r)}`);
      assert.equal(r.code, Code.Canceled);
      assert.match(r.rawMessage, /CANCEL/);
      session.destroy();
    } else {
      const req = http.request({
        port: server.port,
        host: "127.0.0.1",
        method: "POST",
        path: "/test.v1.Counter/Get",
        headers: { "content-type": "application/proto" },
      });
      req.on("error", () => {});
      req.end();
      await running;
      req.destroy();
      const r = await reason;
      // connect-node's reason for a response closed early: the request's error when it has one, else an AbortError.
      assert.ok(r instanceof ConnectError || (r instanceof Error && r.name === "AbortError"), `ended with ${String(r)}`);
      assert.equal(ConnectError.from(r).code, Code.Canceled);
    }
  });
}
