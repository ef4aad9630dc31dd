import { describe, test } from "node:test";
import assert from "node:assert/strict";
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { Code, ConnectError, createClient, type ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter, createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { healthV1 } from "@platform/proto";
import { mapDownstreamError, wasNeverProcessed } from "./downstream-error.js";

const ctx = { dependency: "stock", ownDeadlinePassed: false, callerCancelled: false };

describe("mapping a dependency's error at each hop", () => {
  test("caller errors pass up unchanged, so the user reads the same message", () => {
    const out = mapDownstreamError(new ConnectError('unknown sku "X"', Code.InvalidArgument), ctx);
    assert.equal(out.code, Code.InvalidArgument);
    assert.equal(out.rawMessage, 'unknown sku "X"');
  });

  test("a dependency's failure is marked with the dependency's name, for the breakers above; the caller's errors are not; a mark from further down is kept", () => {
    assert.equal(mapDownstreamError(new ConnectError("stock-db: database unavailable", Code.Unavailable), ctx).metadata.get("x-failed-dependency"), "stock");
    const late = mapDownstreamError(new ConnectError("stream reset", Code.Internal), { ...ctx, ownDeadlinePassed: true });
    assert.equal(late.code, Code.DeadlineExceeded);
    assert.equal(late.metadata.get("x-failed-dependency"), "stock", "too slow is the dependency's failure too");
    const deeper = new ConnectError("stock: warehouse-db: down", Code.Unavailable, { "x-failed-dependency": "warehouse" });
    assert.equal(mapDownstreamError(deeper, ctx).metadata.get("x-failed-dependency"), "warehouse", "where the failure began");
    assert.equal(mapDownstreamError(new ConnectError('unknown sku "X"', Code.InvalidArgument), ctx).metadata.get("x-failed-dependency"), null);
    assert.equal(mapDownstreamError(new ConnectError("x", Code.Canceled), { ...ctx, callerCancelled: true }).metadata.get("x-failed-dependency"), null);
  });

  test("server-side failures name the dependency", () => {
    const out = mapDownstreamError(new ConnectError("stock-db: database unavailable", Code.Unavailable), ctx);
    assert.equal(out.code, Code.Unavailable);
    assert.equal(out.rawMessage, "stock: stock-db: database unavailable");
  });

  test("a fresh error: only the pushback hint and a refusal's mark cross the hop, never other wire headers", () => {
    const err = new ConnectError("overloaded", Code.ResourceExhausted, {
      "grpc-retry-pushback-ms": "120",
      "x-failed-dependency": "pricing",
      "content-type": "application/grpc",
      "x-secret": "1",
    });
    const out = mapDownstreamError(err, ctx);
    assert.notEqual(out, err);
    assert.equal(out.metadata.get("grpc-retry-pushback-ms"), "120");
    assert.equal(out.metadata.get("x-failed-dependency"), "pricing", "the hops above do not count a refusal made below (stacked breakers)");
    assert.equal(out.metadata.get("content-type"), null);
    assert.equal(out.metadata.get("x-secret"), null);
  });

  test("our own deadline wins over what the transport reported (an internal stream reset)", () => {
    const out = mapDownstreamError(new ConnectError("stream closed with error code NGHTTP2_INTERNAL_ERROR", Code.Internal), {
      ...ctx,
      ownDeadlinePassed: true,
    });
    assert.equal(out.code, Code.DeadlineExceeded);
  });

  test("a caller that went away is CANCELED", () => {
    assert.equal(mapDownstreamError(new Error("aborted"), { ...ctx, callerCancelled: true }).code, Code.Canceled);
  });

  test("a connection reset mid-call (ABORTED from connect-node) is UNAVAILABLE, not a conflict", () => {
    const reset = Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
    const out = mapDownstreamError(new ConnectError("read ECONNRESET", Code.Aborted, undefined, undefined, reset), ctx);
    assert.equal(Code[out.code], Code[Code.Unavailable]);
    assert.match(out.rawMessage, /^stock: connection lost mid-call/);
    assert.equal(wasNeverProcessed(out), false, "it may have been processed");
    const conflict = mapDownstreamError(new ConnectError("transaction aborted", Code.Aborted), ctx);
    assert.equal(Code[conflict.code], Code[Code.Aborted], "an ABORTED the dependency answered stays one");
  });

  test("REFUSED_STREAM means never processed: UNAVAILABLE and safe to retry", () => {
    const cause = Object.assign(new Error("Stream closed with error code NGHTTP2_REFUSED_STREAM"), { code: "ERR_HTTP2_STREAM_ERROR" });
    const out = mapDownstreamError(new ConnectError("stream error", Code.Internal, undefined, undefined, cause), ctx);
    assert.equal(out.code, Code.Unavailable);
    assert.ok(wasNeverProcessed(out));
  });
});

test("a CANCELED from the dependency when our caller did not cancel is the dependency going away: UNAVAILABLE", () => {
  const out = mapDownstreamError(new ConnectError("http/2 stream closed with error code CANCEL (0x8)", Code.Canceled), {
    dependency: "orders",
    ownDeadlinePassed: false,
    callerCancelled: false,
  });
  assert.equal(out.code, Code.Unavailable);
  assert.match(out.rawMessage, /^orders: /);
});

// Why the mapping still builds a fresh error (and why the platform no longer
// needs to for safety): since connect-es 2.2 (connectrpc/connect-es#1717) a
// rethrown error parsed from the wire keeps its code, message and details but
// none of its headers, so it can no longer corrupt our response; the
// pushback hint would be lost with them, and mapDownstreamError carries it
// across. Fails the day upstream relays wire headers again.
describe("connect-es: a downstream error rethrown as it is", () => {
  test("reaches the caller with its code and message, without the dependency's headers (nor its pushback hint)", async () => {
    const inner = await h2Server((router) =>
      router.service(healthV1.Health, {
        check() {
          throw new ConnectError("inner says no", Code.ResourceExhausted, { "x-inner-secret": "1", "grpc-retry-pushback-ms": "120" });
        },
      }),
    );
    const innerClient = createClient(healthV1.Health, createGrpcTransport({ baseUrl: inner.url }));
    const middle = await h2Server((router) =>
      router.service(healthV1.Health, {
        async check(req) {
          return await innerClient.check(req); // rethrows the wire error untouched
        },
      }),
    );
    try {
      for (const transport of [createGrpcTransport({ baseUrl: middle.url }), createConnectTransport({ baseUrl: middle.url, httpVersion: "2" })]) {
        const err = await createClient(healthV1.Health, transport)
          .check({ service: "" })
          .then(
            () => assert.fail("expected an error"),
            (e: unknown) => ConnectError.from(e),
          );
        assert.equal(err.code, Code.ResourceExhausted);
        assert.equal(err.rawMessage, "inner says no");
        assert.equal(err.metadata.get("x-inner-secret"), null, "the dependency's header stayed behind");
        assert.equal(err.metadata.get("grpc-retry-pushback-ms"), null, "so did its pushback hint: mapDownstreamError copies it");
      }
      const mapped = mapDownstreamError(await innerClient.check({ service: "" }).catch((e: unknown) => e), ctx);
      assert.equal(mapped.metadata.get("grpc-retry-pushback-ms"), "120");
    } finally {
      inner.close();
      middle.close();
    }
  });
});

async function h2Server(routes: (router: ConnectRouter) => void): Promise<{ url: string; close(): void }> {
  const server = http2.createServer(connectNodeAdapter({ routes }));
  const open = new Set<http2.ServerHttp2Session>();
  server.on("session", (s: http2.ServerHttp2Session) => {
    open.add(s);
    s.once("close", () => open.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => {
      server.close();
      for (const s of open) s.destroy();
    },
  };
}
