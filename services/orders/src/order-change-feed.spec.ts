/**
 * The change feed on a real PostgreSQL with the receipts service's own
 * migrations: one LISTEN connection for any number of watchers, opened by
 * the first and closed by the last (counted in pg_stat_activity); a
 * receipt's committed state change wakes its order's watchers and nobody
 * else's; a rolled-back one, or an update that keeps the state, wakes
 * nobody; a lost connection ends every watch with UNAVAILABLE.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import { migrate } from "@platform/database";
import pg from "pg";
import { eventually } from "@platform/test-support";
import { type TestServer, adminQuery, startTestServer } from "../../../packages/database/src/testing/test-server.js";
import { changeFeedApplicationName, OrderChangeFeed, type ChangeSubscription } from "./order-change-feed.js";

let server: TestServer;
before(async () => {
  server = await startTestServer();
  await adminQuery(server.url, "CREATE SCHEMA IF NOT EXISTS receipts");
  await migrate(server.url, { schema: "receipts", directory: fileURLToPath(new URL("../../receipts/migrations", import.meta.url)) });
});
after(() => server?.destroy());

const quiet = { info() {}, warn() {} };
const feedConnections = async () =>
  (await adminQuery<{ n: number }>(server.url, "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1", [changeFeedApplicationName]))[0]!
    .n;

/** A receipt row, pending (as the order's transaction writes it). */
async function pendingReceipt(): Promise<string> {
  const id = randomUUID();
  await adminQuery(server.url, "INSERT INTO receipts.receipts (order_id, due_at) VALUES ($1, now() + interval '1 hour')", [id]);
  return id;
}

/** Whether `sub` is woken within a settled moment: a notification arrives in milliseconds on loopback, so 300 ms of silence is none. */
async function woken(sub: ChangeSubscription): Promise<boolean> {
  const abort = new AbortController();
  const t = setTimeout(() => abort.abort("quiet"), 300);
  try {
    await sub.changed(abort.signal);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(t);
  }
}

test("many watchers share one LISTEN connection, opened by the first, closed by the last", async () => {
  const feed = new OrderChangeFeed(server.url, quiet);
  assert.equal(await feedConnections(), 0);
  const subs = await Promise.all(Array.from({ length: 50 }, () => feed.subscribe(randomUUID())));
  assert.equal(await feedConnections(), 1);
  assert.deepEqual(feed.stats(), { watchers: 50, listening: true });
  for (const s of subs.slice(1)) s.close();
  assert.equal(await feedConnections(), 1, "one watcher left: still listening");
  subs[0]!.close();
  await eventually(async () => (await feedConnections()) === 0, "the last watcher closed the connection");
  assert.deepEqual(feed.stats(), { watchers: 0, listening: false });
});

test("a committed state change wakes its order's watchers only; a rollback or an unchanged state wakes nobody", async () => {
  const feed = new OrderChangeFeed(server.url, quiet);
  const [a, b] = [await pendingReceipt(), await pendingReceipt()];
  const [watchA1, watchA2, watchB] = [await feed.subscribe(a), await feed.subscribe(a), await feed.subscribe(b)];
  try {
    // A claim counts an attempt but keeps the state: no change for a watcher.
    await adminQuery(server.url, "UPDATE receipts.receipts SET attempts = attempts + 1 WHERE order_id = $1", [a]);
    assert.equal(await woken(watchA1), false);
    const tx = new pg.Client({ connectionString: server.url });
    await tx.connect();
    await tx.query("BEGIN");
    await tx.query("UPDATE receipts.receipts SET state = 'failed' WHERE order_id = $1", [a]);
    await tx.query("ROLLBACK");
    await tx.end();
    assert.equal(await woken(watchA1), false, "a rolled-back change notifies nobody");
    await adminQuery(server.url, "UPDATE receipts.receipts SET state = 'sent', message_id = 'm', sent_at = now() WHERE order_id = $1", [a]);
    assert.equal(await woken(watchA1), true);
    assert.equal(await woken(watchA2), true);
    assert.equal(await woken(watchB), false, "another order's watcher sleeps on");
  } finally {
    for (const s of [watchA1, watchA2, watchB]) s.close();
  }
});

test("a notification before the watcher waits is not lost: the next wait returns at once", async () => {
  const feed = new OrderChangeFeed(server.url, quiet);
  const id = await pendingReceipt();
  const sub = await feed.subscribe(id);
  try {
    await adminQuery(server.url, "UPDATE receipts.receipts SET state = 'failed' WHERE order_id = $1", [id]);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(await woken(sub), true);
    assert.equal(await woken(sub), false, "one change, one wake-up");
  } finally {
    sub.close();
  }
});

test("the feed's connection terminated: every watch ends UNAVAILABLE, and the next watcher listens again", async () => {
  const feed = new OrderChangeFeed(server.url, quiet);
  const sub = await feed.subscribe(randomUUID());
  const ended = sub.changed(new AbortController().signal).then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );
  await adminQuery(server.url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [changeFeedApplicationName]);
  const error = await ended;
  assert.equal(error?.code, Code.Unavailable);
  assert.match(error!.rawMessage, /the database connection was lost; resume after the last position received$/);
  sub.close();
  const again = await feed.subscribe(randomUUID());
  assert.equal(await feedConnections(), 1);
  again.close();
  await eventually(async () => (await feedConnections()) === 0, "closed again");
});
