import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { Code, ConnectError } from "@connectrpc/connect";
import { mapDownstreamError, wasNeverProcessed } from "./downstream-error.js";

const ctx = { dependency: "pricing", ownDeadlinePassed: false, callerCancelled: false };

describe("mapping a dependency's error at each hop", () => {
  test("caller errors pass up unchanged, so the user reads the same message", () => {
    const out = mapDownstreamError(new ConnectError('unknown sku "X"', Code.InvalidArgument), ctx);
    assert.equal(out.code, Code.InvalidArgument);
    assert.equal(out.rawMessage, 'unknown sku "X"');
  });

  test("server-side failures name the dependency", () => {
    const out = mapDownstreamError(new ConnectError("pricing-db: database unavailable", Code.Unavailable), ctx);
    assert.equal(out.code, Code.Unavailable);
    assert.equal(out.rawMessage, "pricing: pricing-db: database unavailable");
  });

  test("a fresh error: only the pushback hint crosses the hop, never other wire headers", () => {
    const err = new ConnectError("overloaded", Code.ResourceExhausted, { "grpc-retry-pushback-ms": "120", "content-type": "application/grpc", "x-secret": "1" });
    const out = mapDownstreamError(err, ctx);
    assert.notEqual(out, err);
    assert.equal(out.metadata.get("grpc-retry-pushback-ms"), "120");
    assert.equal(out.metadata.get("content-type"), null);
    assert.equal(out.metadata.get("x-secret"), null);
  });

  test("our own deadline wins over what the transport reported (an internal stream reset)", () => {
    const out = mapDownstreamError(new ConnectError("stream closed with error code NGHTTP2_INTERNAL_ERROR", Code.Internal), { ...ctx, ownDeadlinePassed: true });
    assert.equal(out.code, Code.DeadlineExceeded);
  });

  test("a caller that went away is CANCELED", () => {
    assert.equal(mapDownstreamError(new Error("aborted"), { ...ctx, callerCancelled: true }).code, Code.Canceled);
  });

  test("a connection reset mid-call (ABORTED from connect-node) is UNAVAILABLE, not a conflict", () => {
    const reset = Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
    const out = mapDownstreamError(new ConnectError("read ECONNRESET", Code.Aborted, undefined, undefined, reset), ctx);
    assert.equal(Code[out.code], Code[Code.Unavailable]);
    assert.match(out.rawMessage, /^pricing: connection lost mid-call/);
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
  const out = mapDownstreamError(new ConnectError("http/2 stream closed with error code CANCEL (0x8)", Code.Canceled), { dependency: "orders", ownDeadlinePassed: false, callerCancelled: false });
  assert.equal(out.code, Code.Unavailable);
  assert.match(out.rawMessage, /^orders: /);
});
