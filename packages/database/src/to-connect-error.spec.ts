import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import { createScope } from "@platform/resilience";
import { toConnectError } from "./to-connect-error.js";

function pgError(code: string, message = "boom"): Error {
  return Object.assign(new Error(message), { code });
}

function mapped(err: unknown): ConnectError {
  const out = toConnectError(err, "orders-db");
  assert.ok(out instanceof ConnectError);
  return out;
}

describe("toConnectError", () => {
  it("maps a deadlock and a serialization failure to Aborted, naming the conflict and keeping the cause", () => {
    const deadlock = pgError("40P01", "deadlock detected");
    const a = mapped(deadlock);
    assert.equal(a.code, Code.Aborted);
    assert.equal(a.rawMessage, "orders-db: transaction rolled back by a concurrency conflict: deadlock detected (40P01)");
    assert.equal(a.cause, deadlock);
    const s = mapped(pgError("40001", "could not serialize access due to concurrent update"));
    assert.equal(s.code, Code.Aborted);
    assert.equal(s.rawMessage, "orders-db: transaction rolled back by a concurrency conflict: serialization failure (40001)");
  });

  it("maps query_canceled by why the scope ended", () => {
    const ac = new AbortController();
    const scope = createScope({ timeoutMs: 10_000, requestId: "r", procedure: "/p", parentSignals: [ac.signal] });
    const deadline = toConnectError(pgError("57014"), "orders-db", scope);
    assert.ok(deadline instanceof ConnectError);
    assert.equal(deadline.code, Code.DeadlineExceeded);
    assert.equal(deadline.rawMessage, "orders-db: statement cancelled at deadline");
    ac.abort();
    const cancelled = toConnectError(pgError("57014"), "orders-db", scope);
    assert.ok(cancelled instanceof ConnectError);
    assert.equal(cancelled.code, Code.Canceled);
    assert.equal(cancelled.rawMessage, "orders-db: statement cancelled: caller went away");
    scope.dispose();

    const down = new AbortController();
    down.abort("shutdown");
    const shutdownScope = createScope({ timeoutMs: 10_000, requestId: "r", procedure: "/p", parentSignals: [down.signal] });
    const shutdown = toConnectError(pgError("57014"), "orders-db", shutdownScope);
    assert.ok(shutdown instanceof ConnectError);
    assert.equal(shutdown.code, Code.Unavailable);
    shutdownScope.dispose();
  });

  it("maps connection failures to Unavailable with a short reason, never the raw message", () => {
    const cases: [unknown, string][] = [
      [pgError("ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:5432"), "connection refused"],
      [pgError("ECONNRESET"), "connection reset"],
      [pgError("ETIMEDOUT"), "connection timed out"],
      [pgError("EPIPE"), "connection closed"],
      [new Error("Connection terminated unexpectedly"), "connection terminated"],
      [pgError("08006"), "connection failure (08006)"],
      [pgError("57P01", "terminating connection due to administrator command"), "terminated by the server (57P01)"],
      [pgError("57P02"), "server crashed (57P02)"],
      [pgError("57P03"), "server not accepting connections yet (57P03)"],
      [pgError("53300", "sorry, too many clients already"), "too many connections (53300)"],
      [pgError("28P01", 'password authentication failed for user "orders"'), "authentication failed (28P01)"],
      [pgError("28000", 'no pg_hba.conf entry for host "10.0.0.7"'), "connection not authorized (28000)"],
      [pgError("3D000", 'database "platform" does not exist'), "database does not exist (3D000)"],
      [new AggregateError([pgError("ECONNREFUSED")], "x"), "connection refused"],
    ];
    for (const [err, reason] of cases) {
      const out = mapped(err);
      assert.equal(out.code, Code.Unavailable);
      assert.equal(out.rawMessage, `orders-db: database unavailable: ${reason}`);
      assert.equal(out.cause, err);
    }
  });

  it("returns every other error unchanged", () => {
    const unique = pgError("23505", 'duplicate key value violates unique constraint "orders_pkey"');
    assert.equal(toConnectError(unique, "orders-db"), unique);
    const plain = new Error("bug");
    assert.equal(toConnectError(plain, "orders-db"), plain);
    const already = new ConnectError("x", Code.NotFound);
    assert.equal(toConnectError(already, "orders-db"), already);
  });
});
