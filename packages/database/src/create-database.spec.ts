// npm test: own process (it reads prom-client's global registry, which every spec's pools and interceptors in a shared process also write)
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Code, ConnectError } from "@connectrpc/connect";
import { FakeClock, createScope, runInScope } from "@platform/resilience";
import { register } from "prom-client";
import { type Database, createDatabase } from "./index.js";
import { metricValue } from "./testing/metric-value.js";
import { watchStatements } from "./testing/statement-watch.js";
import { type TestServer, activeStatements, eventually, startTestServer } from "./testing/test-server.js";

/** How long after its deadline a statement may still be seen running on the server: the timer firing and the cancel's round trip (the watcher's poll interval is not in it: the bound reads its last poll that saw the statement). */
const cancelGraceMs = 400;

function isConnectError(code: Code, message?: RegExp) {
  return (err: unknown) => {
    assert.ok(err instanceof ConnectError, `expected a ConnectError, got ${String(err)}`);
    assert.equal(Code[err.code], Code[code], err.message);
    if (message) assert.match(err.message, message);
    return true;
  };
}

function scoped<T>(
  timeoutMs: number,
  fn: () => Promise<T>,
  extra: { clock?: FakeClock; parentSignals?: AbortSignal[]; callsEnd?: AbortSignal } = {},
): Promise<T> {
  const scope = createScope({ timeoutMs, requestId: "test", procedure: "/test.v1.Test/Run", ...extra });
  return runInScope(scope, fn).finally(() => scope.dispose());
}

/** The server process behind the connection a one-connection pool hands out. */
const backendPid = (db: Database): Promise<number> => db.transaction(async (tx) => (await tx.query("SELECT pg_backend_pid() AS pid")).rows[0].pid);

describe("Database.transaction", () => {
  let pg: TestServer;
  const dbs: Database[] = [];
  const open = (name: string, maxConnections = 2) => {
    const db = createDatabase({ name, connectionString: pg.url, minBudgetMs: 5, maxConnections });
    dbs.push(db);
    return db;
  };
  before(async () => {
    pg = await startTestServer();
  });
  after(async () => {
    try {
      await Promise.allSettled(dbs.map((db) => db.close()));
    } finally {
      await pg.destroy();
    }
  });

  it("sets statement_timeout to the remaining budget minus the reserve, per transaction", async () => {
    const db = open("timeout-db");
    const clock = new FakeClock(1000);
    const setting = "SELECT setting FROM pg_settings WHERE name = 'statement_timeout'";
    const seen = await scoped(
      10_000,
      () => {
        clock.advance(1234); // remaining 8766 ms
        return db.transaction(async (tx) => {
          const first = (await tx.query<{ setting: string }>(setting)).rows[0]?.setting;
          clock.advance(1000); // the budget shrank: the next statement must not get the old one
          const second = (await tx.query<{ setting: string }>(setting)).rows[0]?.setting;
          clock.advance(10); // small drift: no extra round trip
          const third = (await tx.query<{ setting: string }>(setting)).rows[0]?.setting;
          return [first, second, third];
        });
      },
      { clock },
    );
    assert.deepEqual(seen, ["8761", "7761", "7761"]);
    // SET LOCAL: nothing stays on the pooled session after the transaction.
    const after = await db.transaction(async (tx) => (await tx.query("SELECT current_setting('statement_timeout') AS v")).rows[0].v);
    assert.notEqual(after, "7761ms");
  });

  it("runs read-only transactions when asked", async () => {
    const db = open("readonly-db");
    const ro = await db.transaction(async (tx) => (await tx.query("SHOW transaction_read_only")).rows[0].transaction_read_only, {
      readOnly: true,
    });
    assert.equal(ro, "on");
  });

  it("commits on success and rolls back on error", async () => {
    const db = open("commit-db");
    await db.transaction((tx) => tx.query("CREATE TABLE commit_test (v int)"));
    await db.transaction((tx) => tx.query("INSERT INTO commit_test VALUES (1)"));
    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.query("INSERT INTO commit_test VALUES (2)");
        throw new Error("boom");
      }),
      /boom/,
    );
    const rows = await db.transaction(async (tx) => (await tx.query("SELECT v FROM commit_test ORDER BY v")).rows);
    assert.deepEqual(rows, [{ v: 1 }]);
  });

  it("does not report success when the body swallowed a failed statement", async () => {
    const db = open("swallow-db");
    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.query("SELECT 1/0").catch(() => {});
        return "ok";
      }),
      (err: unknown) => (err as { code?: string }).code === "22012",
    );
  });

  it("stops a statement at the deadline: DeadlineExceeded, gone from the server, connection back in the pool", async () => {
    const db = open("deadline-db");
    // A warm connection: the 300 ms are the statement's. (Connecting inside them, on a loaded machine,
    // spent the deadline waiting for a connection, a different outcome.)
    await db.transaction((tx) => tx.query("SELECT 1"));
    const watch = watchStatements(pg.url, { applicationName: "deadline-db", queryContains: "pg_sleep" });
    await watch.polling; // the statement lives about 300 ms: a watcher still connecting could miss it
    await assert.rejects(
      scoped(300, () => db.transaction((tx) => tx.query("SELECT pg_sleep(10)"))),
      isConnectError(Code.DeadlineExceeded, /^\[deadline_exceeded\] deadline-db: statement cancelled at deadline$/),
    );
    assert.ok(await eventually(async () => (await activeStatements(pg.url, "deadline-db")).length === 0), "pg_sleep still running on the server");
    // Guards "no work past the deadline": by the server's clock, the statement is gone within
    // its 300 ms deadline plus a fixed grace (a correctness bound, not a speed claim).
    const statements = await watch.stop();
    assert.equal(statements.length, 1, "the watcher saw the statement run");
    assert.ok(statements[0]!.goneBy !== undefined, "the statement ended");
    assert.ok(
      statements[0]!.ranAtLeastMs <= 300 + cancelGraceMs,
      `the statement was still running ${Math.round(statements[0]!.ranAtLeastMs)} ms after it started (deadline 300 ms + ${cancelGraceMs} ms grace)`,
    );
    assert.ok(await eventually(() => db.stats().inUse === 0), `pool not back: ${JSON.stringify(db.stats())}`);
    assert.ok((await metricValue("db_statements_total", { db: "deadline-db", outcome: "cancelled_deadline" })) >= 1);
  });

  it("cancels the running statement on the server when the caller goes away", async () => {
    const db = open("cancel-db", 1);
    const pidBefore = await backendPid(db);
    const caller = new AbortController();
    // 30 s deadline: statement_timeout cannot be what stops the 20 s sleep below.
    const running = scoped(30_000, () => db.transaction((tx) => tx.query("SELECT pg_sleep(20)")), { parentSignals: [caller.signal] });
    assert.ok(await eventually(async () => (await activeStatements(pg.url, "cancel-db")).length === 1), "pg_sleep never started");
    caller.abort();
    await assert.rejects(running, isConnectError(Code.Canceled, /^\[canceled\] cancel-db: statement cancelled: caller went away$/));
    assert.deepEqual(await activeStatements(pg.url, "cancel-db"), []);
    assert.ok(await eventually(() => db.stats().inUse === 0), `pool not back: ${JSON.stringify(db.stats())}`);
    // The same connection came back (cancelled, not dropped).
    const pidAfter = await backendPid(db);
    assert.equal(pidAfter, pidBefore);
    assert.equal(await metricValue("db_statements_total", { db: "cancel-db", outcome: "cancelled_caller" }), 1);
  });

  it("drops the connection when the server does not answer the cancel", async () => {
    const db = open("stuck-db", 1);
    const backend: number = await backendPid(db);
    const caller = new AbortController();
    const running = scoped(30_000, () => db.transaction((tx) => tx.query("SELECT pg_sleep(20)")), { parentSignals: [caller.signal] });
    assert.ok(await eventually(async () => (await activeStatements(pg.url, "stuck-db")).length === 1), "pg_sleep never started");
    process.kill(backend, "SIGSTOP"); // a backend that cannot react: our cancel goes unanswered
    try {
      caller.abort();
      await assert.rejects(running, isConnectError(Code.Canceled, /stuck-db: statement cancelled: caller went away/));
      assert.equal(db.stats().total, 0, "a connection in an unknown state went back to the pool");
    } finally {
      process.kill(backend, "SIGCONT");
    }
    const fresh: number = await backendPid(db);
    assert.notEqual(fresh, backend);
  });

  it("stops waiting for a statement when the request's calls end, before its deadline; the server cancels it and the connection is pooled again", async () => {
    const db = open("calls-end-db", 1);
    const pidBefore: number = await backendPid(db);
    const callsEnd = new AbortController();
    // 30 s deadline: neither statement_timeout nor the deadline is what ends the 20 s sleep below.
    const running = scoped(30_000, () => db.transaction((tx) => tx.query("SELECT pg_sleep(20)")), { callsEnd: callsEnd.signal });
    assert.ok(await eventually(async () => (await activeStatements(pg.url, "calls-end-db")).length === 1), "pg_sleep never started");
    callsEnd.abort("deadline");
    await assert.rejects(running, isConnectError(Code.DeadlineExceeded, /^\[deadline_exceeded\] calls-end-db: statement cancelled at deadline$/));
    assert.ok(await eventually(async () => (await activeStatements(pg.url, "calls-end-db")).length === 0), "the statement was not cancelled on the server");
    assert.ok(await eventually(() => db.stats().inUse === 0), `pool not back: ${JSON.stringify(db.stats())}`);
    // Rolled back after the answer and pooled: the same connection serves the next transaction.
    const pidAfter: number = await backendPid(db);
    assert.equal(pidAfter, pidBefore);
    assert.equal(await metricValue("db_statements_total", { db: "calls-end-db", outcome: "cancelled_deadline" }), 1);
  });

  it("stops waiting when the request's calls end even when the server answers nothing, and drops that connection after the grace", async () => {
    const db = open("calls-end-stuck-db", 1);
    const backend: number = await backendPid(db);
    const callsEnd = new AbortController();
    let settled = false;
    const running = scoped(30_000, () => db.transaction((tx) => tx.query("SELECT pg_sleep(20)")), { callsEnd: callsEnd.signal });
    void running.then(
      () => (settled = true),
      () => (settled = true),
    );
    assert.ok(await eventually(async () => (await activeStatements(pg.url, "calls-end-stuck-db")).length === 1), "pg_sleep never started");
    process.kill(backend, "SIGSTOP"); // a frozen server: neither the statement nor the cancel gets an answer
    try {
      await sleep(50);
      assert.equal(settled, false, "the statement's wait ended before the calls did");
      callsEnd.abort("deadline");
      // Answered while the connection is still held (the cancel's grace has not run out): the caller did not wait for it.
      await assert.rejects(running, isConnectError(Code.DeadlineExceeded, /^\[deadline_exceeded\] calls-end-stuck-db: statement cancelled at deadline$/));
      assert.equal(db.stats().inUse, 1, "the connection is held until its cancel is answered or its grace ends");
      assert.ok(await eventually(() => db.stats().total === 0), `a connection in an unknown state went back to the pool: ${JSON.stringify(db.stats())}`);
    } finally {
      process.kill(backend, "SIGCONT");
    }
    const fresh: number = await backendPid(db);
    assert.notEqual(fresh, backend);
  });

  it("fails with Unavailable after close", async () => {
    const db = open("closed-db");
    await db.close();
    await assert.rejects(
      db.transaction((tx) => tx.query("SELECT 1")),
      isConnectError(Code.Unavailable, /closed-db: database unavailable: pool closed/),
    );
  });

  it("refuses to start with less than the minimum budget, without touching the pool", async () => {
    const db = open("budget-db");
    const clock = new FakeClock();
    let called = false;
    await assert.rejects(
      scoped(
        4,
        () =>
          db.transaction(async () => {
            called = true;
          }),
        { clock },
      ),
      isConnectError(Code.DeadlineExceeded, /budget-db: not enough time left to start \(4ms\)/),
    );
    assert.equal(called, false);
    assert.equal(db.stats().total, 0);
    assert.equal(await metricValue("db_transactions_rejected_total", { db: "budget-db", reason: "budget" }), 1);
  });

  it("waits for a connection only as long as the deadline allows, and leaks nothing", async () => {
    const db = open("pool-db", 1);
    const holder = db.transaction((tx) => tx.query("SELECT pg_sleep(1)"));
    assert.ok(await eventually(() => db.stats().inUse === 1));
    await assert.rejects(
      scoped(200, () => db.transaction((tx) => tx.query("SELECT 1"))),
      isConnectError(Code.DeadlineExceeded, /pool-db: timed out waiting for a connection/),
    );
    assert.equal(db.stats().waiting, 0, "a caller that gave up still counts as waiting");
    await holder;
    assert.ok(await eventually(() => db.stats().inUse === 0 && db.stats().waiting === 0), JSON.stringify(db.stats()));
    assert.ok(db.stats().total <= 1);
    assert.equal((await db.transaction((tx) => tx.query("SELECT 1 AS one"))).rows[0].one, 1);
    assert.equal(await metricValue("db_transactions_rejected_total", { db: "pool-db", reason: "pool_wait" }), 1);
  });

  it("gives up waiting for a connection when the caller goes away", async () => {
    const db = open("pool-cancel-db", 1);
    const holder = db.transaction((tx) => tx.query("SELECT pg_sleep(0.5)"));
    assert.ok(await eventually(() => db.stats().inUse === 1));
    const caller = new AbortController();
    const waiting = scoped(10_000, () => db.transaction((tx) => tx.query("SELECT 1")), { parentSignals: [caller.signal] });
    assert.ok(await eventually(() => db.stats().waiting === 1));
    caller.abort();
    await assert.rejects(waiting, isConnectError(Code.Canceled, /pool-cancel-db: caller went away/));
    assert.equal(db.stats().waiting, 0);
    await holder;
  });

  it("rethrows a unique violation unchanged", async () => {
    const db = open("unique-db");
    await db.transaction((tx) => tx.query("CREATE TABLE uniq (k text PRIMARY KEY)"));
    await db.transaction((tx) => tx.query("INSERT INTO uniq VALUES ($1)", ["a"]));
    await assert.rejects(
      db.transaction((tx) => tx.query("INSERT INTO uniq VALUES ($1)", ["a"])),
      (err: unknown) => {
        assert.ok(!(err instanceof ConnectError));
        assert.equal((err as { code?: string }).code, "23505");
        return true;
      },
    );
    assert.ok(await eventually(() => db.stats().inUse === 0));
  });

  it("a write on a connection to a server that takes none (a standby): Unavailable naming it, and that connection is closed, not pooled", async () => {
    const db = open("standby-db", 1);
    await db.transaction((tx) => tx.query("CREATE TABLE standby_t (v int)"));
    const backend = async () => (await db.transaction((tx) => tx.query("SELECT pg_backend_pid() AS pid"))).rows[0].pid as number;
    const before = await backend();
    // The one pooled connection now behaves as one to a standby: every transaction on it is read-only.
    await db.transaction((tx) => tx.query("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY"));
    await assert.rejects(
      scoped(5000, () => db.transaction((tx) => tx.query("INSERT INTO standby_t VALUES (1)"))),
      isConnectError(
        Code.Unavailable,
        /^\[unavailable\] standby-db: database unavailable: the server takes no writes \(a standby, or set read-only\) \(25006\)$/,
      ),
    );
    // The next transaction gets a new connection, which takes writes.
    assert.notEqual(await backend(), before);
    await db.transaction((tx) => tx.query("INSERT INTO standby_t VALUES (2)"));
    // A transaction that asked to be read-only and writes: its own bug, the server's error as it is.
    await assert.rejects(
      db.transaction((tx) => tx.query("INSERT INTO standby_t VALUES (3)"), { readOnly: true }),
      (err: unknown) => {
        assert.ok(!(err instanceof ConnectError));
        assert.equal((err as { code?: string }).code, "25006");
        return true;
      },
    );
    const rows = await db.transaction(async (tx) => (await tx.query("SELECT v FROM standby_t ORDER BY v")).rows);
    assert.deepEqual(rows, [{ v: 2 }]);
  });

  it("a deadlock between two transactions: the one the server rolls back is Aborted, naming the conflict; the other commits", async () => {
    const db = open("deadlock-db", 2);
    await db.transaction((tx) => tx.query("CREATE TABLE dl (k int PRIMARY KEY, v int)"));
    await db.transaction((tx) => tx.query("INSERT INTO dl VALUES (1, 0), (2, 0)"));
    let firstLocks = 0;
    let bothLocked: () => void = () => {};
    const locked = new Promise<void>((resolve) => (bothLocked = resolve));
    // Each locks one row, waits until the other holds its own, then asks for the other's.
    const crossing = (mine: number, theirs: number) =>
      scoped(10_000, () =>
        db.transaction(async (tx) => {
          await tx.query("UPDATE dl SET v = v + 1 WHERE k = $1", [mine]);
          if (++firstLocks === 2) bothLocked();
          await locked;
          await tx.query("UPDATE dl SET v = v + 1 WHERE k = $1", [theirs]);
        }),
      );
    const outcomes = await Promise.allSettled([crossing(1, 2), crossing(2, 1)]);
    const rejected = outcomes.filter((o) => o.status === "rejected").map((o) => (o as PromiseRejectedResult).reason);
    assert.equal(rejected.length, 1, "the server broke the deadlock by rolling back one of the two");
    isConnectError(Code.Aborted, /^\[aborted\] deadlock-db: transaction rolled back by a concurrency conflict: deadlock detected \(40P01\)$/)(rejected[0]);
    const rows = await db.transaction(async (tx) => (await tx.query("SELECT k, v FROM dl ORDER BY k")).rows);
    assert.deepEqual(rows, [
      { k: 1, v: 1 },
      { k: 2, v: 1 },
    ]);
  });

  it("a server that refuses the connection by its rules (no such role, no such database): Unavailable naming why, not an internal error", async () => {
    const url = new URL(pg.url);
    const refused = (mutate: (u: URL) => void) => {
      const u = new URL(url);
      mutate(u);
      const db = createDatabase({ name: "refused-db", connectionString: u.toString(), minBudgetMs: 5, maxConnections: 1 });
      dbs.push(db);
      return scoped(5000, () => db.transaction((tx) => tx.query("SELECT 1")));
    };
    await assert.rejects(
      refused((u) => {
        u.username = "nobody_here";
      }),
      isConnectError(Code.Unavailable, /^\[unavailable\] refused-db: database unavailable: connection not authorized \(28000\)$/),
    );
    await assert.rejects(
      refused((u) => {
        u.pathname = "/no_such_database";
      }),
      isConnectError(Code.Unavailable, /^\[unavailable\] refused-db: database unavailable: database does not exist \(3D000\)$/),
    );
  });

  it("applies the fallback deadline outside any request scope", async () => {
    const db = createDatabase({ name: "fallback-db", connectionString: pg.url, minBudgetMs: 5, maxConnections: 1, fallbackTimeoutMs: 300 });
    dbs.push(db);
    await assert.rejects(
      db.transaction((tx) => tx.query("SELECT pg_sleep(10)")),
      isConnectError(Code.DeadlineExceeded),
    );
  });

  it("exports pool, statement and wait metrics per database", async () => {
    const a = open("metrics-a-db");
    const b = open("metrics-b-db");
    await a.transaction((tx) => tx.query("SELECT 1"));
    await b.transaction((tx) => tx.query("SELECT 1"));
    const text = await register.metrics();
    assert.match(text, /db_pool_connections\{db="metrics-a-db",state="idle"\} 1/);
    assert.match(text, /db_pool_connections\{db="metrics-b-db",state="in_use"\} 0/);
    assert.match(text, /db_statements_total\{db="metrics-a-db",outcome="ok"\} 1/);
    assert.match(text, /db_pool_wait_seconds_count\{db="metrics-b-db"\} 1/);
    assert.match(text, /db_statement_seconds_count\{db="metrics-b-db"\} 1/);
    await b.close();
    assert.doesNotMatch(await register.metrics(), /db_pool_connections\{db="metrics-b-db"/);
  });

  it("refuses statements once the scope has ended", async () => {
    const db = open("ended-db");
    await db.transaction((tx) => tx.query("SELECT 1")); // a warm connection: connecting must not use up the 150 ms (it did on a loaded machine)
    await assert.rejects(
      scoped(150, () =>
        db.transaction(async (tx) => {
          await sleep(300);
          await tx.query("SELECT 1");
        }),
      ),
      isConnectError(Code.DeadlineExceeded, /ended-db: deadline exceeded before the statement started/),
    );
    assert.ok(await eventually(() => db.stats().inUse === 0));
  });
});
