import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { formatConnectTimeout, formatGrpcTimeout, parseTimeoutHeader, resolveInboundDeadline } from "./timeout-header.js";

function reason(r: ReturnType<typeof parseTimeoutHeader>): string {
  assert.equal(r.ok, false, `expected a failure, got ${JSON.stringify(r)}`);
  return r.ok ? "" : r.reason;
}

describe("parseTimeoutHeader grpc-timeout", () => {
  it("converts every unit to whole milliseconds", () => {
    assert.deepEqual(parseTimeoutHeader("grpc-timeout", "2H"), { ok: true, ms: 7_200_000 });
    assert.deepEqual(parseTimeoutHeader("grpc-timeout", "3M"), { ok: true, ms: 180_000 });
    assert.deepEqual(parseTimeoutHeader("grpc-timeout", "5S"), { ok: true, ms: 5_000 });
    assert.deepEqual(parseTimeoutHeader("grpc-timeout", "250m"), { ok: true, ms: 250 });
    assert.deepEqual(parseTimeoutHeader("grpc-timeout", "1500u"), { ok: true, ms: 1 });
    assert.deepEqual(parseTimeoutHeader("grpc-timeout", "2000000n"), { ok: true, ms: 2 });
  });

  it("rounds sub-millisecond values down, so 999u is already expired", () => {
    assert.deepEqual(parseTimeoutHeader("grpc-timeout", "999u"), { ok: true, ms: 0 });
    assert.deepEqual(parseTimeoutHeader("grpc-timeout", "999999n"), { ok: true, ms: 0 });
  });

  it("accepts zero (already expired) and the 8-digit maximum", () => {
    assert.deepEqual(parseTimeoutHeader("grpc-timeout", "0m"), { ok: true, ms: 0 });
    assert.deepEqual(parseTimeoutHeader("grpc-timeout", "99999999H"), { ok: true, ms: 99_999_999 * 3_600_000 });
    assert.deepEqual(parseTimeoutHeader("grpc-timeout", "00000001S"), { ok: true, ms: 1_000 });
  });

  it("matches the header name case-insensitively", () => {
    assert.deepEqual(parseTimeoutHeader("Grpc-Timeout", "1S"), { ok: true, ms: 1_000 });
  });

  it("gives a clear reason for each malformed value", () => {
    assert.match(reason(parseTimeoutHeader("grpc-timeout", "")), /empty/);
    assert.match(reason(parseTimeoutHeader("grpc-timeout", "-5m")), /negative/);
    assert.match(reason(parseTimeoutHeader("grpc-timeout", "1.5S")), /non-digit/);
    assert.match(reason(parseTimeoutHeader("grpc-timeout", "+5m")), /non-digit/);
    assert.match(reason(parseTimeoutHeader("grpc-timeout", " 5m")), /non-digit/);
    assert.match(reason(parseTimeoutHeader("grpc-timeout", "123456789m")), /more than 8 digits/);
    assert.match(reason(parseTimeoutHeader("grpc-timeout", "10s")), /unknown unit "s"/);
    assert.match(reason(parseTimeoutHeader("grpc-timeout", "10x")), /unknown unit "x"/);
    assert.match(reason(parseTimeoutHeader("grpc-timeout", "10")), /no unit/);
    assert.match(reason(parseTimeoutHeader("grpc-timeout", "m")), /no digits/);
    assert.match(reason(parseTimeoutHeader("grpc-timeout", "1a5x")), /non-digit/);
  });
});

describe("parseTimeoutHeader connect-timeout-ms", () => {
  it("reads milliseconds", () => {
    assert.deepEqual(parseTimeoutHeader("connect-timeout-ms", "1500"), { ok: true, ms: 1_500 });
    assert.deepEqual(parseTimeoutHeader("connect-timeout-ms", "9999999999"), { ok: true, ms: 9_999_999_999 });
  });

  it("accepts zero as already expired", () => {
    assert.deepEqual(parseTimeoutHeader("connect-timeout-ms", "0"), { ok: true, ms: 0 });
  });

  it("gives a clear reason for each malformed value", () => {
    assert.match(reason(parseTimeoutHeader("connect-timeout-ms", "")), /empty/);
    assert.match(reason(parseTimeoutHeader("connect-timeout-ms", "-1")), /negative/);
    assert.match(reason(parseTimeoutHeader("connect-timeout-ms", "1e3")), /non-digit/);
    assert.match(reason(parseTimeoutHeader("connect-timeout-ms", "100ms")), /non-digit/);
    assert.match(reason(parseTimeoutHeader("connect-timeout-ms", "12345678901")), /more than 10 digits/);
  });
});

it("parseTimeoutHeader reports an unknown header name instead of throwing", () => {
  assert.match(reason(parseTimeoutHeader("x-timeout", "5")), /unknown timeout header/);
});

describe("formatGrpcTimeout", () => {
  it("uses milliseconds while they fit in 8 digits", () => {
    assert.equal(formatGrpcTimeout(1), "1m");
    assert.equal(formatGrpcTimeout(2_500), "2500m");
    assert.equal(formatGrpcTimeout(99_999_999), "99999999m");
  });

  it("switches to a coarser unit and rounds down", () => {
    assert.equal(formatGrpcTimeout(100_000_000), "100000S");
    assert.equal(formatGrpcTimeout(100_000_999), "100000S");
    assert.equal(formatGrpcTimeout(99_999_999_999), "99999999S");
    assert.equal(formatGrpcTimeout(100_000_000_000), "1666666M");
    // 100000000 minutes do not fit in 8 digits either.
    assert.equal(formatGrpcTimeout(60_000 * 100_000_000), "1666666H");
  });

  it("clamps beyond 99999999 hours", () => {
    assert.equal(formatGrpcTimeout(Number.MAX_SAFE_INTEGER), "99999999H");
  });

  it("rounds fractions down but never below 1 ms", () => {
    assert.equal(formatGrpcTimeout(2.9), "2m");
    assert.equal(formatGrpcTimeout(0.2), "1m");
  });

  it("never tells the callee it has more time than given", () => {
    for (const ms of [1, 7, 999, 1_000, 123_456_789, 9_876_543_210, 4e12, 3.6e14]) {
      const formatted = formatGrpcTimeout(ms);
      const parsed = parseTimeoutHeader("grpc-timeout", formatted);
      assert.ok(parsed.ok, formatted);
      assert.ok(parsed.ms <= ms, `${formatted} means ${parsed.ms} > ${ms}`);
      assert.ok(parsed.ms > 0);
    }
  });

  it("refuses an expired or absurd timeout", () => {
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      assert.throws(() => formatGrpcTimeout(bad), RangeError);
    }
  });
});

describe("formatConnectTimeout", () => {
  it("writes whole milliseconds rounded down, at least 1", () => {
    assert.equal(formatConnectTimeout(1_500), "1500");
    assert.equal(formatConnectTimeout(1_500.9), "1500");
    assert.equal(formatConnectTimeout(0.4), "1");
  });

  it("clamps to 10 digits", () => {
    assert.equal(formatConnectTimeout(1e12), "9999999999");
  });

  it("round-trips through parseTimeoutHeader", () => {
    for (const ms of [1, 42, 10_000, 9_999_999_999]) {
      assert.deepEqual(parseTimeoutHeader("connect-timeout-ms", formatConnectTimeout(ms)), { ok: true, ms });
    }
  });

  it("refuses an expired or absurd timeout", () => {
    for (const bad of [0, -5, Number.NaN, Number.POSITIVE_INFINITY]) {
      assert.throws(() => formatConnectTimeout(bad), RangeError);
    }
  });
});

describe("resolveInboundDeadline", () => {
  const cfg = { defaultMs: 2_000, maxMs: 10_000 };

  it("uses the client's deadline when within the cap", () => {
    assert.deepEqual(resolveInboundDeadline({ headerMs: 1_500, ...cfg }), { timeoutMs: 1_500, source: "client" });
    assert.deepEqual(resolveInboundDeadline({ headerMs: 10_000, ...cfg }), { timeoutMs: 10_000, source: "client" });
  });

  it("keeps an already expired deadline at 0", () => {
    assert.deepEqual(resolveInboundDeadline({ headerMs: 0, ...cfg }), { timeoutMs: 0, source: "client" });
  });

  it("caps an absurd deadline", () => {
    assert.deepEqual(resolveInboundDeadline({ headerMs: 3_600_000, ...cfg }), { timeoutMs: 10_000, source: "capped" });
  });

  it("applies the default when the client sent none", () => {
    assert.deepEqual(resolveInboundDeadline({ headerMs: undefined, ...cfg }), { timeoutMs: 2_000, source: "default" });
  });

  it("rejects a configuration whose default exceeds the cap", () => {
    assert.throws(() => resolveInboundDeadline({ headerMs: undefined, defaultMs: 5_000, maxMs: 1_000 }), RangeError);
    assert.throws(() => resolveInboundDeadline({ headerMs: undefined, defaultMs: 0, maxMs: 1_000 }), RangeError);
  });

  it("rejects a negative header value (it should have failed parsing)", () => {
    assert.throws(() => resolveInboundDeadline({ headerMs: -1, ...cfg }), RangeError);
  });
});
