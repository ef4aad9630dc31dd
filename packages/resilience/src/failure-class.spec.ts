import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Code } from "@connectrpc/connect";
import {
  classify,
  countsAgainstDependency,
  describesCallersRequest,
  type FailureClass,
  isServerFault,
  neverRetryable,
  signalsOverload,
} from "./failure-class.js";

interface Row {
  outcome: Code | "ok";
  class: FailureClass;
  neverRetryable: boolean;
  breakerFailure: boolean;
  overload: boolean;
  serverFault: boolean;
  passedUpUnchanged: boolean;
}

// prettier-ignore
const table: Row[] = [
  { outcome: "ok", class: "ok", neverRetryable: false, breakerFailure: false, overload: false, serverFault: false, passedUpUnchanged: false },
  { outcome: Code.Canceled, class: "cancelled", neverRetryable: true, breakerFailure: false, overload: false, serverFault: false, passedUpUnchanged: false },
  { outcome: Code.Unknown, class: "dependency", neverRetryable: false, breakerFailure: true, overload: false, serverFault: true, passedUpUnchanged: false },
  { outcome: Code.InvalidArgument, class: "caller", neverRetryable: true, breakerFailure: false, overload: false, serverFault: false, passedUpUnchanged: true },
  {
    outcome: Code.DeadlineExceeded,
    class: "deadline",
    neverRetryable: true,
    breakerFailure: true,
    overload: false,
    serverFault: false,
    passedUpUnchanged: false,
  },
  { outcome: Code.NotFound, class: "caller", neverRetryable: true, breakerFailure: false, overload: false, serverFault: false, passedUpUnchanged: true },
  { outcome: Code.AlreadyExists, class: "caller", neverRetryable: true, breakerFailure: false, overload: false, serverFault: false, passedUpUnchanged: true },
  {
    outcome: Code.PermissionDenied,
    class: "caller",
    neverRetryable: true,
    breakerFailure: false,
    overload: false,
    serverFault: false,
    passedUpUnchanged: true,
  },
  {
    outcome: Code.ResourceExhausted,
    class: "overload",
    neverRetryable: false,
    breakerFailure: true,
    overload: true,
    serverFault: false,
    passedUpUnchanged: false,
  },
  {
    outcome: Code.FailedPrecondition,
    class: "caller",
    neverRetryable: true,
    breakerFailure: false,
    overload: false,
    serverFault: false,
    passedUpUnchanged: true,
  },
  { outcome: Code.Aborted, class: "conflict", neverRetryable: false, breakerFailure: false, overload: false, serverFault: false, passedUpUnchanged: false },
  { outcome: Code.OutOfRange, class: "caller", neverRetryable: true, breakerFailure: false, overload: false, serverFault: false, passedUpUnchanged: true },
  { outcome: Code.Unimplemented, class: "caller", neverRetryable: true, breakerFailure: false, overload: false, serverFault: false, passedUpUnchanged: true },
  { outcome: Code.Internal, class: "dependency", neverRetryable: false, breakerFailure: true, overload: false, serverFault: true, passedUpUnchanged: false },
  { outcome: Code.Unavailable, class: "dependency", neverRetryable: false, breakerFailure: true, overload: false, serverFault: true, passedUpUnchanged: false },
  { outcome: Code.DataLoss, class: "dependency", neverRetryable: false, breakerFailure: true, overload: false, serverFault: true, passedUpUnchanged: false },
  { outcome: Code.Unauthenticated, class: "caller", neverRetryable: true, breakerFailure: false, overload: false, serverFault: false, passedUpUnchanged: true },
];

const name = (o: Code | "ok") => (o === "ok" ? "ok" : Code[o]);

describe("failure classes", () => {
  it("the table covers every Connect code and ok, once each", () => {
    const codes = Object.values(Code).filter((v): v is Code => typeof v === "number");
    assert.equal(codes.length, 16);
    assert.deepEqual(table.map((r) => r.outcome).sort(), (["ok", ...codes] as (Code | "ok")[]).sort());
  });

  for (const row of table) {
    it(`${name(row.outcome)} is "${row.class}"`, () => {
      assert.equal(classify(row.outcome), row.class);
      assert.equal(signalsOverload(row.outcome), row.overload);
      if (row.outcome === "ok") return;
      const code = row.outcome;
      assert.equal(neverRetryable(code), row.neverRetryable, "never retryable");
      assert.equal(countsAgainstDependency(code), row.breakerFailure, "counts in the breaker");
      assert.equal(isServerFault(code), row.serverFault, "server fault in the log");
      assert.equal(describesCallersRequest(code), row.passedUpUnchanged, "passed up unchanged");
    });
  }

  it("refuses a number that is not a Connect code", () => {
    assert.throws(() => classify(0 as Code), /not a Connect code: 0/);
    assert.throws(() => classify(17 as Code), /not a Connect code: 17/);
  });
});
