/**
 * The relay on a real PostgreSQL (docs/outbox.md): batches claimed and
 * completed in one statement each, each receipt sent once across a
 * database crash, and statements that give up within their own deadline
 * when the table is locked from outside.
 */
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, beforeEach, test } from "node:test";
import pg from "pg";
import { adminQuery, eventually, type TestServer } from "../../../packages/database/src/testing/test-server.js";
import { CountingMailer, startReceiptsDatabase, startTestRelay } from "./testing/relay-harness.js";

let server: TestServer;
before(async () => {
  server = await startReceiptsDatabase();
});
after(async () => {
  await server?.destroy();
});
beforeEach(async () => {
  await adminQuery(server.url, "TRUNCATE receipts.receipts");
});

/** Writes `n` receipts as orders does (enqueue_receipt), in one statement; returns their order ids. */
async function enqueue(n: number): Promise<string[]> {
  const rows = await adminQuery<{ id: string }>(
    server.url,
    "SELECT id::text FROM (SELECT gen_random_uuid() AS id FROM generate_series(1, $1)) o, LATERAL receipts.enqueue_receipt(o.id)",
    [n],
  );
  return rows.map((r) => r.id);
}

/** Receipts not sent, or sent without the message id the mailer gave their key. */
async function notSentAsMailed(ids: string[], mailer: CountingMailer): Promise<string[]> {
  const rows = await adminQuery<{ order_id: string; state: string; message_id: string | null }>(
    server.url,
    "SELECT order_id::text, state, message_id FROM receipts.receipts WHERE order_id = ANY($1::uuid[])",
    [ids],
  );
  return rows.filter((r) => r.state !== "sent" || r.message_id !== mailer.messageIds.get(r.order_id)).map((r) => `${r.order_id} ${r.state}`);
}

test("due receipts are claimed in full batches, each sent once and marked sent with its message id", async () => {
  const ids = await enqueue(250);
  const mailer = new CountingMailer();
  const r = startTestRelay(server.url, mailer);
  try {
    assert.ok(await eventually(async () => (await notSentAsMailed(ids, mailer)).length === 0, 30_000), "every receipt sent");
    assert.deepEqual(r.batches, [100, 100, 50]);
    assert.equal(mailer.calls, 250);
    assert.deepEqual([...new Set(mailer.fresh.values())], [1]);
    const [row] = await adminQuery<{ attempts: number; leased: number }>(
      server.url,
      "SELECT max(attempts)::int AS attempts, count(leased_until)::int AS leased FROM receipts.receipts",
    );
    assert.deepEqual(row, { attempts: 1, leased: 0 });
  } finally {
    await r.close();
  }
});

test("two relays claim one receipt at once (the first's lease ended while its send was slow): one receipt goes out, and it is marked sent once", async () => {
  const [id] = await enqueue(1);
  const mailer = new CountingMailer();
  mailer.delayMs = 300;
  const first = startTestRelay(server.url, mailer);
  const second = startTestRelay(server.url, mailer);
  try {
    assert.ok(await eventually(() => mailer.calls === 1, 30_000), "the first claim's send is in flight");
    await adminQuery(server.url, "UPDATE receipts.receipts SET leased_until = NULL WHERE order_id = $1", [id]);
    assert.ok(await eventually(() => mailer.calls === 2, 30_000), "claimed again by the other relay");
    assert.ok(await eventually(async () => (await notSentAsMailed([id!], mailer)).length === 0, 30_000), "sent");
    // The second send answers 300 ms after it started, after the first has been recorded.
    assert.ok(await eventually(() => mailer.duplicates === 1, 30_000), "the mailer's key made the second send a duplicate");
    assert.equal(mailer.fresh.get(id!), 1);
    // Both outcomes are written; the receipt was marked sent once, and both claims counted their attempt.
    assert.ok(await eventually(async () => (await adminQuery(server.url, "SELECT 1 FROM receipts.receipts WHERE leased_until IS NOT NULL")).length === 0));
    const [row] = await adminQuery<{ state: string; attempts: number }>(server.url, "SELECT state, attempts FROM receipts.receipts WHERE order_id = $1", [id]);
    assert.deepEqual(row, { state: "sent", attempts: 2 });
  } finally {
    await first.close();
    await second.close();
  }
});

test("PostgreSQL stopped with -m immediate while a batch is being sent: once it is back, every receipt is sent exactly once", async () => {
  const ids = await enqueue(200);
  const mailer = new CountingMailer();
  mailer.delayMs = 20;
  const r = startTestRelay(server.url, mailer, { concurrency: 4, leaseMs: 4000 });
  try {
    assert.ok(await eventually(() => mailer.calls >= 20, 30_000), "a batch was being sent");
    await server.server.stop("immediate");
    await sleep(1000);
    await server.restart();
    assert.ok(await eventually(async () => (await notSentAsMailed(ids, mailer)).length === 0, 60_000), "every receipt sent once the database is back");
    assert.equal(mailer.fresh.size, 200);
    assert.deepEqual([...new Set(mailer.fresh.values())], [1], "no receipt went out twice");
  } finally {
    await r.close();
  }
});

test("a table locked from outside: the relays' statements give up within their own deadline, and the receipts go out once the lock is gone", async () => {
  const statementTimeoutMs = 300;
  const ids = await enqueue(40);
  const mailer = new CountingMailer();
  mailer.delayMs = 300;
  const failures: Array<{ message: string; code: unknown }> = [];
  const logger = {
    info() {},
    warn(o: object, message: string) {
      failures.push({ message, code: (o as { err?: { code?: unknown } }).err?.code });
    },
  };
  // One relay's batch is being sent when the lock is taken (its outcomes' write meets the lock); the other claims (its claims meet it).
  const busy = startTestRelay(server.url, mailer, {
    statementTimeoutMs,
    batchSize: 20,
    concurrency: 20,
    leaseMs: 15_000,
    logger,
    applicationName: "receipts-locked",
  });
  assert.ok(await eventually(() => mailer.calls > 0, 30_000), "a batch is being sent");
  const locker = new pg.Client({ connectionString: server.url });
  await locker.connect();
  await locker.query("BEGIN; LOCK TABLE receipts.receipts IN ACCESS EXCLUSIVE MODE");
  const idle = startTestRelay(server.url, mailer, { statementTimeoutMs, batchSize: 20, logger, applicationName: "receipts-locked" });
  let longestWaitMs = 0;
  try {
    const lockedUntil = performance.now() + 4000;
    while (performance.now() < lockedUntil) {
      const [row] = await adminQuery<{ ms: number | null }>(
        server.url,
        `SELECT max(extract(epoch FROM clock_timestamp() - query_start) * 1000)::float8 AS ms FROM pg_stat_activity
          WHERE application_name = 'receipts-locked' AND state = 'active' AND wait_event_type = 'Lock'`,
      );
      longestWaitMs = Math.max(longestWaitMs, row?.ms ?? 0);
      await sleep(20);
    }
    // Its lock_timeout is what is left of its deadline: the server's timer ends the wait on time, and the
    // margin is for the sampling and the backend being scheduled late on a loaded machine.
    assert.ok(longestWaitMs <= statementTimeoutMs + 200, `a statement waited ${Math.round(longestWaitMs)} ms for the lock`);
    const lockTimeouts = failures.filter((f) => f.code === "55P03");
    assert.ok(
      lockTimeouts.some((f) => f.message.startsWith("could not claim")),
      `claims gave up on the lock: ${JSON.stringify(failures)}`,
    );
    assert.ok(
      lockTimeouts.some((f) => f.message.startsWith("could not write the batch's outcomes yet")),
      `the outcomes' write gave up on the lock: ${JSON.stringify(failures)}`,
    );
    await locker.query("COMMIT");
    assert.ok(await eventually(async () => (await notSentAsMailed(ids, mailer)).length === 0, 30_000), "every receipt sent once the lock is gone");
    assert.deepEqual([...new Set(mailer.fresh.values())], [1]);
  } finally {
    await locker.end().catch(() => {});
    await idle.close();
    await busy.close();
  }
});
