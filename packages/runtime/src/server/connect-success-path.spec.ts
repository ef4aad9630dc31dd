import { test } from "node:test";
import assert from "node:assert/strict";
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { ConnectError, createClient, type HandlerContext, type Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import { Counter } from "@platform/test-support";

// The performance hunks of patches/@connectrpc+connect+2.3.0.patch and
// @connectrpc+connect-node+2.3.0.patch (patches/README.md): a call that
// succeeds makes no error object. Unpatched, connect-es ends the handler's
// signal and the client call's signal with a new DOMException each
// (`abort()` without a reason) and connect-node makes a ConnectError
// ("sentinel completed early") after every response, each capturing a
// stack. Over a real HTTP/2 connection, as every hop runs it.
test("a successful call ends its signals with one shared reason and makes no ConnectError", async () => {
  const handlerSignals: AbortSignal[] = [];
  const server = http2.createServer(
    connectNodeAdapter({
      routes: (router) =>
        router.service(Counter, {
          get(_req: unknown, ctx: HandlerContext) {
            handlerSignals.push(ctx.signal);
            return {};
          },
          async *count() {},
        } as never),
    }),
  );
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (s) => sessions.add(s));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const clientSignals: AbortSignal[] = [];
  const recordSignal: Interceptor = (next) => (req) => {
    clientSignals.push(req.signal);
    return next(req);
  };
  const transport = createGrpcTransport({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, interceptors: [recordSignal] });
  const client = createClient(Counter, transport) as unknown as { get(req: object): Promise<unknown> };
  await client.get({}); // the connection and the JIT, outside the count
  // Every ConnectError sets its prototype in its constructor (connect-error.js): counted
  // there, when connect-node's client made it (this process may run other specs' leftovers).
  const setPrototypeOf = Object.setPrototypeOf;
  let connectErrors = 0;
  Object.setPrototypeOf = (o: object, proto: object | null) => {
    if (proto === ConnectError.prototype && /node-universal-client/.test(new Error().stack ?? "")) connectErrors++;
    return setPrototypeOf(o, proto);
  };
  try {
    await client.get({});
    await client.get({});
    // The server's side ends after its answer is written: wait for the second handler's signal.
    await new Promise<void>((resolve) => (handlerSignals[2]!.aborted ? resolve() : handlerSignals[2]!.addEventListener("abort", () => resolve())));
  } finally {
    Object.setPrototypeOf = setPrototypeOf;
    // The client keeps its connection for the next call: end it from this side, so nothing outlives the test.
    for (const s of sessions) s.destroy();
    server.close();
  }
  assert.equal(connectErrors, 0, "ConnectErrors made by two successful calls");
  for (const [side, signals] of [
    ["handler", handlerSignals],
    ["client call", clientSignals],
  ] as const) {
    assert.equal(signals.length, 3, side);
    assert.ok(
      signals.every((s) => s.aborted),
      `every ${side} signal ended`,
    );
    const reason = signals[1]!.reason as DOMException;
    assert.equal(reason.name, "AbortError", side);
    assert.equal(reason.message, "This operation was aborted", side);
    assert.equal(signals[2]!.reason, reason, `the ${side}'s signals end with one shared reason, not a new DOMException each`);
  }
});
