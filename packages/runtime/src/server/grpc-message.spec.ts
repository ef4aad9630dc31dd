import { test } from "node:test";
import assert from "node:assert/strict";
import { encodeGrpcMessage } from "./grpc-message.js";

test("printable ASCII other than % is written as it is", () => {
  const s = "key already used for a different request; use a new key, or \"resend\" /the same/ one? a=b&c #1 +2 @x :y [z] {w} `v` 'u' \\t ~";
  assert.equal(encodeGrpcMessage(s), s);
});

test("%, control characters and every non-ASCII byte are percent-encoded (upper-case hex, UTF-8)", () => {
  assert.equal(encodeGrpcMessage("100%"), "100%25");
  assert.equal(encodeGrpcMessage("a\nb\tc\x7f"), "a%0Ab%09c%7F");
  assert.equal(encodeGrpcMessage("café ☕ 😀"), "caf%C3%A9 %E2%98%95 %F0%9F%98%80");
});

test("a lone surrogate becomes U+FFFD instead of throwing", () => {
  assert.equal(encodeGrpcMessage("bad \ud800 string"), "bad %EF%BF%BD string");
});

test("what it writes decodes back exactly with decodeURIComponent (connect-es clients) and, for non-reserved text, decodeURI (grpc-js)", () => {
  for (const s of ["must be positive, got 0", "x; y", "é/ü", "50% off", 'say "hi"', "tab\there"]) {
    assert.equal(decodeURIComponent(encodeGrpcMessage(s)), s);
    assert.equal(decodeURI(encodeGrpcMessage(s)), s);
  }
});
