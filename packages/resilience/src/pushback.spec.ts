import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { pushbackHeaders, readPushback } from "./pushback.js";

const now = Date.UTC(2025, 0, 15, 12, 0, 0);

describe("readPushback", () => {
  it("reads a Retry-After of several digits as that many seconds", () => {
    assert.equal(readPushback(new Headers({ "retry-after": "120" }), 0), 120_000);
  });

  it("reads grpc-retry-pushback-ms", () => {
    assert.equal(readPushback(new Headers({ "grpc-retry-pushback-ms": "250" }), now), 250);
    assert.equal(readPushback(new Headers({ "grpc-retry-pushback-ms": "0" }), now), 0);
  });

  it("reads a negative or malformed grpc-retry-pushback-ms as never (gRFC A6)", () => {
    for (const v of ["-1", "abc", "1.5", "", "10ms", "1e3"]) {
      assert.equal(readPushback(new Headers({ "grpc-retry-pushback-ms": v }), now), "never", JSON.stringify(v));
    }
  });

  it("reads a repeated grpc-retry-pushback-ms as malformed", () => {
    const h = new Headers();
    h.append("grpc-retry-pushback-ms", "100");
    h.append("grpc-retry-pushback-ms", "200");
    assert.equal(readPushback(h, now), "never");
  });

  it("reads retry-after delta-seconds", () => {
    assert.equal(readPushback(new Headers({ "retry-after": "3" }), now), 3_000);
    assert.equal(readPushback(new Headers({ "retry-after": "0" }), now), 0);
  });

  it("reads a retry-after HTTP-date relative to now", () => {
    assert.equal(readPushback(new Headers({ "retry-after": "Wed, 15 Jan 2025 12:00:05 GMT" }), now), 5_000);
  });

  it("reads a retry-after date in the past as 0", () => {
    assert.equal(readPushback(new Headers({ "retry-after": "Wed, 15 Jan 2025 11:59:00 GMT" }), now), 0);
  });

  it("ignores a malformed retry-after (it is not a 'never')", () => {
    for (const v of ["-1", "1.5", "soon", "Wed, 99 Foo 2025"]) {
      assert.equal(readPushback(new Headers({ "retry-after": v }), now), undefined, v);
    }
  });

  it("prefers grpc-retry-pushback-ms over retry-after", () => {
    assert.equal(readPushback(new Headers({ "grpc-retry-pushback-ms": "150", "retry-after": "10" }), now), 150);
    assert.equal(readPushback(new Headers({ "grpc-retry-pushback-ms": "-1", "retry-after": "10" }), now), "never");
  });

  it("returns undefined when there is no hint", () => {
    assert.equal(readPushback(new Headers({ "content-type": "application/grpc" }), now), undefined);
  });
});

describe("pushbackHeaders", () => {
  it("writes both headers, retry-after in whole seconds rounded up", () => {
    assert.deepEqual(pushbackHeaders(1_500), { "grpc-retry-pushback-ms": "1500", "retry-after": "2" });
    assert.deepEqual(pushbackHeaders(2_000), { "grpc-retry-pushback-ms": "2000", "retry-after": "2" });
    assert.deepEqual(pushbackHeaders(1), { "grpc-retry-pushback-ms": "1", "retry-after": "1" });
    assert.deepEqual(pushbackHeaders(0), { "grpc-retry-pushback-ms": "0", "retry-after": "0" });
    assert.deepEqual(pushbackHeaders(99.2), { "grpc-retry-pushback-ms": "100", "retry-after": "1" });
  });

  it("writes a 'do not retry' hint", () => {
    assert.deepEqual(pushbackHeaders("never"), { "grpc-retry-pushback-ms": "-1" });
    assert.equal(readPushback(new Headers(pushbackHeaders("never")), now), "never");
  });

  it("round-trips through readPushback", () => {
    for (const ms of [0, 1, 250, 5_000]) assert.equal(readPushback(new Headers(pushbackHeaders(ms)), now), ms);
    // An HTTP/1.1 client that only understands retry-after never comes back early.
    const only = new Headers({ "retry-after": pushbackHeaders(1_200)["retry-after"] ?? "" });
    assert.ok((readPushback(only, now) as number) >= 1_200);
  });

  it("refuses a negative or non-finite delay", () => {
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY]) assert.throws(() => pushbackHeaders(bad), RangeError);
  });
});
