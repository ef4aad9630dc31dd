import { test } from "node:test";
import assert from "node:assert/strict";
import { EarlyResendHold } from "./early-resend.js";

const hint = (ms: number) => new Headers({ "grpc-retry-pushback-ms": String(ms) });

test("a connection that resends before its pushback has the refusal held until then, never past its deadline less a margin", () => {
  const hold = new EarlyResendHold();
  const h1 = { httpVersionMajor: 1, socket: {} };
  assert.equal(hold.holdMs(h1, hint(1000), 10_000, 0), 0, "the first refusal is answered at once");
  assert.equal(hold.holdMs(h1, hint(1000), 10_000, 10), 990, "resent 10 ms later: held to the time it was told");
  assert.equal(hold.holdMs(h1, hint(1000), 510, 10), 450, "but answered 50 ms before its deadline");
  assert.equal(hold.holdMs(h1, hint(1000), 40, 10), 0, "a deadline too close for a hold: at once");
  assert.equal(hold.holdMs(h1, hint(1000), 10_000, 1000), 0, "resent when told: at once, and told again");
  assert.equal(hold.holdMs(h1, hint(1000), 10_000, 1500), 500);
});

test("a hold lasts at most a second, whatever the pushback (a rate limit's minutes are the client's to honour)", () => {
  const hold = new EarlyResendHold();
  const h1 = { httpVersionMajor: 1, socket: {} };
  hold.holdMs(h1, hint(17 * 60_000), 60_000, 0);
  assert.equal(hold.holdMs(h1, hint(17 * 60_000), 60_000, 10), 1000);
});

test("other connections, HTTP/2 connections and refusals without a hint are never held", () => {
  const hold = new EarlyResendHold();
  const flooder = { httpVersionMajor: 1, socket: {} };
  hold.holdMs(flooder, hint(1000), 10_000, 0);
  assert.equal(hold.holdMs({ httpVersionMajor: 1, socket: {} }, hint(1000), 10_000, 10), 0, "another client's connection");
  const h2 = { httpVersionMajor: 2, socket: {} };
  hold.holdMs(h2, hint(1000), 10_000, 0);
  assert.equal(hold.holdMs(h2, hint(1000), 10_000, 10), 0, "an HTTP/2 connection carries many callers");
  const noHint = { httpVersionMajor: 1, socket: {} };
  hold.holdMs(noHint, new Headers(), 10_000, 0);
  assert.equal(hold.holdMs(noHint, hint(1000), 10_000, 10), 0, "a refusal without a hint told the connection nothing");
});
