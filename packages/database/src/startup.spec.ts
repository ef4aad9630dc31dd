import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import { FakeScheduler } from "@platform/resilience";
import { createDatabase, migrate } from "./index.js";
import { retryDuringStartup, waitForDatabase } from "./startup.js";
import { type TestServer, adminQuery, startTestServer } from "./testing/test-server.js";

const down = () => new ConnectError("x-db: database unavailable: connection refused", Code.Unavailable);

/** Lets pending promise callbacks run (the fake scheduler fires timers synchronously). */
const settle = () => new Promise((r) => setImmediate(r));

describe("retryDuringStartup (fake clock)", () => {
  it("retries transient failures with full-jitter backoff until one succeeds", async () => {
    const clock = new FakeScheduler(0);
    const waits: number[] = [];
    let calls = 0;
    const result = retryDuringStartup(
      async () => {
        calls++;
        if (calls < 4) throw down();
        return "up";
      },
      { name: "x-db", budgetMs: 60_000, clock, scheduler: clock, random: () => 0.5, onRetry: ({ delayMs }) => waits.push(delayMs) },
    );
    for (let i = 0; i < 10 && calls < 4; i++) {
      await settle();
      clock.advance(10_000);
    }
    assert.equal(await result, "up");
    assert.equal(calls, 4);
    // Half of the cap each time (random 0.5): caps 100, 200, 400 ms.
    assert.deepEqual(waits, [50, 100, 200]);
  });

  it("gives up when the budget is spent, with Unavailable naming the dependency and the last failure; the last wait is cut to the budget", async () => {
    const clock = new FakeScheduler(0);
    const waits: number[] = [];
    const result = retryDuringStartup(
      async () => {
        throw down();
      },
      {
        name: "x-db",
        budgetMs: 1000,
        clock,
        scheduler: clock,
        random: () => 0.999,
        backoff: { initialMs: 400, multiplier: 2, maxMs: 10_000 },
        onRetry: ({ delayMs }) => waits.push(delayMs),
      },
    );
    result.catch(() => {});
    for (let i = 0; i < 30; i++) {
      await settle();
      clock.advance(100);
    }
    await assert.rejects(result, (err: unknown) => {
      assert.ok(err instanceof ConnectError);
      assert.equal(err.code, Code.Unavailable);
      assert.match(
        err.rawMessage,
        /^x-db: not reachable within the start-up budget of 1000 ms \(3 attempts\); last: x-db: database unavailable: connection refused$/,
      );
      return true;
    });
    assert.equal(waits.length, 2);
    assert.ok(Math.abs(waits[0]! - 399.6) < 0.01, String(waits[0]));
    // The second attempt ran at 400 ms (the fake clock moves in 100 ms steps): its wait is what is left, not the 799.2 ms drawn.
    assert.equal(waits[1], 600, "the second wait is cut to what is left");
  });

  it("does not retry what waiting cannot fix (a migration's SQL error)", async () => {
    const clock = new FakeScheduler(0);
    let calls = 0;
    const sqlError = Object.assign(new Error('syntax error at or near "CREAT"'), { code: "42601" });
    await assert.rejects(
      retryDuringStartup(
        async () => {
          calls++;
          throw sqlError;
        },
        { name: "x-db", budgetMs: 60_000, clock, scheduler: clock },
      ),
      (e: unknown) => e === sqlError,
    );
    assert.equal(calls, 1);
  });

  it("stops waiting when its signal aborts (shutdown during start-up)", async () => {
    const clock = new FakeScheduler(0);
    const stop = new AbortController();
    const result = retryDuringStartup(
      async () => {
        throw down();
      },
      { name: "x-db", budgetMs: 60_000, clock, scheduler: clock, signal: stop.signal },
    );
    result.catch(() => {});
    await settle();
    stop.abort(new Error("shutting down"));
    await assert.rejects(result, /shutting down/);
    assert.equal(clock.pendingTimers(), 0);
  });
});

describe("waitForDatabase (real PostgreSQL)", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.destroy());

  it("waits while the server is down, then migrates once it is back", async () => {
    const dir = mkdtempSync(join(tmpdir(), "startup-migrations-"));
    writeFileSync(join(dir, "0001-t.sql"), "CREATE TABLE t (v int);");
    await server.stop();
    const db = createDatabase({ name: "startup-db", connectionString: server.url, minBudgetMs: 5, maxConnections: 2 });
    const failures: string[] = [];
    try {
      const ready = waitForDatabase(db, () => migrate(db, { schema: "startup", directory: dir }), {
        budgetMs: 30_000,
        onRetry: ({ error }) => failures.push(String(error)),
      });
      let settled = false;
      ready.then(
        () => (settled = true),
        () => (settled = true),
      );
      while (failures.length < 2) await new Promise((r) => setTimeout(r, 20));
      assert.equal(settled, false, "still waiting while the server is down");
      await server.restart();
      assert.deepEqual((await ready).applied, ["0001-t.sql"]);
      assert.match(failures[0]!, /^ConnectError: \[unavailable\] startup-db: database unavailable: connection refused/);
      assert.deepEqual(await adminQuery(server.url, "SELECT name FROM startup.schema_migrations"), [{ name: "0001-t.sql" }]);
    } finally {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("does not wait out a connection the server's rules refuse (no such role): start-up fails at once, naming why", async () => {
    const url = new URL(server.url);
    url.username = "nobody_here";
    const db = createDatabase({ name: "refused-db", connectionString: url.toString(), minBudgetMs: 5, maxConnections: 1 });
    const retries: string[] = [];
    try {
      await assert.rejects(
        waitForDatabase(db, async () => {}, { budgetMs: 30_000, onRetry: ({ error }) => retries.push(String(error)) }),
        (err: unknown) => {
          assert.ok(err instanceof ConnectError);
          assert.equal(err.code, Code.Unavailable);
          assert.match(err.rawMessage, /refused-db: database unavailable: connection not authorized \(28000\)/);
          return true;
        },
      );
      assert.deepEqual(retries, [], "no retry: waiting cannot change the server's rules");
    } finally {
      await db.close();
    }
  });
});
