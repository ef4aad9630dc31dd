import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { expectedLossCodes, lossCauseOf } from "./connection-watch.js";

describe("lossCauseOf", () => {
  it("classifies what ended a connection", () => {
    const cases: [string, string][] = [
      ["57P01", "terminated_by_server"], // pg_terminate_backend, smart/fast shutdown
      ["57P02", "server_crash"],
      ["57P03", "terminated_by_server"],
      ["57P04", "terminated_by_server"], // database dropped
      ["57P05", "timeout"], // idle_session_timeout
      ["25P03", "timeout"], // idle_in_transaction_session_timeout
      ["ETIMEDOUT", "timeout"],
      ["ECONNRESET", "network"],
      ["EPIPE", "network"],
      ["EHOSTUNREACH", "network"],
      ["ERR_SOMETHING", "other"],
    ];
    assert.deepEqual(
      cases.map(([code]) => [code, lossCauseOf(code)]),
      cases,
    );
  });

  it("logs the codes of a failover without a stack", () => {
    assert.deepEqual([...expectedLossCodes].sort(), ["57P01", "57P02", "57P03", "ECONNRESET", "EPIPE"]);
  });
});
