import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import { type Database, createDatabase } from "./index.js";
import { type TestServer, activeStatements, eventually, startTestServer } from "./testing/test-server.js";

function unavailable(err: unknown): boolean {
  assert.ok(err instanceof ConnectError, `expected a ConnectError, got ${String(err)}`);
  assert.equal(Code[err.code], Code[Code.Unavailable], err.message);
  // "database unavailable: ..." when it could not connect, "connection lost: ..." when the connection died under a statement
  assert.match(err.message, /^\[unavailable\] restart-db: (database unavailable|connection lost): /);
  return true;
}

describe("Database across a PostgreSQL restart", () => {
  let pg: TestServer;
  let db: Database;
  const idleErrors: Error[] = [];
  before(async () => {
    pg = await startTestServer();
    db = createDatabase({ name: "restart-db", connectionString: pg.url, minBudgetMs: 5, maxConnections: 2, onIdleConnectionError: (e) => idleErrors.push(e) });
  });
  after(async () => {
    try {
      await db.close();
    } finally {
      await pg.destroy();
    }
  });

  const one = () => db.transaction(async (tx) => (await tx.query("SELECT 1 AS one")).rows[0].one);

  it("reports Unavailable while the server is down and recovers without a restart of its own", async () => {
    assert.equal(await one(), 1);
    assert.equal(db.stats().idle, 1);
    await pg.stop(); // kills the idle pooled connection: must not crash the process
    await assert.rejects(one(), unavailable);
    await assert.rejects(one(), unavailable);
    assert.ok(await eventually(() => db.stats().inUse === 0), JSON.stringify(db.stats()));

    await pg.restart();
    assert.equal(await one(), 1);
    assert.ok(idleErrors.length >= 1, "the idle connection's death went unnoticed");
  });

  it("maps a server shutdown during a statement to Unavailable and drops that connection", async () => {
    // Settled into a value at once: it fails while we are still stopping the server.
    const running = db
      .transaction((tx) => tx.query("SELECT pg_sleep(20)"))
      .then(
        () => assert.fail("pg_sleep survived a server shutdown"),
        (err: unknown) => err,
      );
    assert.ok(await eventually(async () => (await activeStatements(pg.url, "restart-db")).length === 1));
    await pg.stop(); // fast shutdown terminates the session (57P01)
    assert.ok(unavailable(await running));
    assert.ok(await eventually(() => db.stats().total === 0), JSON.stringify(db.stats()));
    await pg.restart();
    assert.equal(await one(), 1);
  });
});
