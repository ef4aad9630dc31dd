import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import net from "node:net";
import { Code, ConnectError } from "@connectrpc/connect";
import { createScope, runInScope } from "@platform/resilience";
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

  /** `one()` with `timeoutMs` to live, as a request with that deadline would run it. */
  const oneWithin = (timeoutMs: number) => {
    const scope = createScope({ timeoutMs, requestId: "", procedure: "test/one" });
    return runInScope(scope, one).finally(() => scope.dispose());
  };

  it("waits for a server that is down, for as long as the deadline allows, then reports Unavailable", async () => {
    assert.equal(await one(), 1);
    assert.equal(db.stats().idle, 1);
    await pg.stop(); // kills the idle pooled connection: must not crash the process
    const started = performance.now();
    await assert.rejects(oneWithin(400), (err) => unavailable(err) && /waited \d+ ms for it to accept connections/.test((err as Error).message));
    assert.ok(performance.now() - started >= 300, "gave up before its deadline");
    await assert.rejects(oneWithin(200), unavailable);
    assert.ok(await eventually(() => db.stats().inUse === 0 && db.stats().waiting === 0), JSON.stringify(db.stats()));

    await pg.restart();
    assert.equal(await one(), 1);
    assert.ok(idleErrors.length >= 1, "the idle connection's death went unnoticed");
  });

  it("serves a transaction that started while the server was down once it is back within the deadline", async () => {
    assert.equal(await one(), 1);
    await pg.stop();
    const waiting = Array.from({ length: 8 }, () => oneWithin(10_000));
    await new Promise((r) => setTimeout(r, 500));
    await pg.restart();
    assert.deepEqual(await Promise.all(waiting), [1, 1, 1, 1, 1, 1, 1, 1]);
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

  it("waiting costs the server one probe at a time, however many transactions wait", async () => {
    // A switch in front of the server that counts connection attempts and, while "down", closes them at once.
    let down = false;
    let attempts = 0;
    const port = new URL(pg.url).port;
    const sockets = new Set<net.Socket>();
    const sw = net.createServer((client) => {
      attempts++;
      if (down) {
        client.destroy();
        return;
      }
      const server = net.connect(Number(port), "127.0.0.1");
      for (const s of [client, server]) {
        sockets.add(s);
        s.on("error", () => {});
        s.on("close", () => sockets.delete(s));
      }
      client.pipe(server).pipe(client);
      client.on("close", () => server.destroy());
      server.on("close", () => client.destroy());
    });
    await new Promise<void>((r) => sw.listen(0, "127.0.0.1", r));
    const url = new URL(pg.url);
    url.port = String((sw.address() as net.AddressInfo).port);
    const switched = createDatabase({ name: "switched-db", connectionString: url.toString(), minBudgetMs: 5, maxConnections: 4 });
    const oneVia = (timeoutMs: number) => {
      const scope = createScope({ timeoutMs, requestId: "", procedure: "test/one" });
      return runInScope(scope, () => switched.transaction(async (tx) => (await tx.query("SELECT 1 AS one")).rows[0].one)).finally(() => scope.dispose());
    };
    try {
      assert.equal(await oneVia(2000), 1);
      down = true;
      for (const s of sockets) s.destroy(); // the server "restarts": every connection ends
      await eventually(() => switched.stats().total === 0);
      attempts = 0;
      const waiting = Array.from({ length: 40 }, () => oneVia(10_000));
      await new Promise((r) => setTimeout(r, 1000));
      const whileDown = attempts;
      down = false;
      assert.deepEqual(new Set(await Promise.all(waiting)), new Set([1]));
      // 40 waiters for 1 s: a few refused first attempts, then one probe every 25-250 ms (at most about 12 in 1 s).
      assert.ok(whileDown <= 20, `connection attempts while down: ${whileDown} for 40 waiting transactions`);
    } finally {
      await switched.close();
      for (const s of sockets) s.destroy();
      await new Promise((r) => sw.close(r));
    }
  });
});
