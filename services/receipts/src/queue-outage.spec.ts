/**
 * The database goes away while receipts are being sent (a PostgreSQL
 * restart under load): every job must still run once it is back, and the
 * queue must still stop. (A stop while it is away: queue-release.spec.ts.)
 *
 * What this guards (graphile-worker 0.18.0, patches/README.md): a job that
 * fails during the outage has its failure written through graphile-worker's
 * batcher, whose write fails too. Unpatched, the batcher gave up at once and
 * shut the runner down, and from the second such failure on its bookkeeping
 * kept that shutdown from ever finishing: the runner neither ran jobs nor
 * ended (so it was never restarted), and stop() never returned. Seen from
 * outside: after one `pg_ctl restart` under order load, every receipt stayed
 * pending while the service reported itself healthy.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, test } from "node:test";
import pg from "pg";
import pino from "pino";
import { adminQuery, eventually, type TestServer } from "../../../packages/database/src/testing/test-server.js";
import { startQueue, type Queue } from "./queue.js";
import { startQueueDatabase } from "./testing/queue-database.js";

let server: TestServer;
/** What a job does besides being a job: a statement on the same server, so that it fails while the server is away. */
let work: pg.Pool;
const queues: Queue[] = [];

before(async () => {
  server = await startQueueDatabase();
  work = new pg.Pool({ connectionString: server.url, max: 8 });
  work.on("error", () => {});
});
after(async () => {
  // Bounded, so that a queue that cannot stop fails its test instead of holding the file.
  for (const q of queues) await Promise.race([q.stop(1000), sleep(5000)]);
  await work?.end();
  await server?.destroy();
});

/** A queue as the service runs one (a local queue, batched outcomes), whose jobs record the order ids they sent. */
async function queue(sent: string[], warnings: string[]): Promise<Queue> {
  const logger = pino({ level: "warn" }, { write: (line: string) => warnings.push(line) });
  const q = await startQueue({
    connectionString: server.url,
    concurrency: 4,
    pollIntervalMs: 100,
    heartbeatIntervalMs: 200,
    logger,
    sendReceipt: async (payload) => {
      // Jobs in flight reach the database at different moments, so that the outage fails several of them, one by one.
      await sleep(20 + Math.random() * 180);
      await work.query("SELECT 1");
      sent.push((payload as { orderId: string }).orderId);
    },
  });
  queues.push(q);
  return q;
}

async function enqueue(n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, () => randomUUID());
  for (const id of ids) await adminQuery(server.url, "SELECT receipts.enqueue_receipt($1)", [id]);
  return ids;
}

const jobsLeft = async () => Number((await adminQuery<{ n: string }>(server.url, "SELECT count(*) AS n FROM receipts._private_jobs"))[0]!.n);

test("a database restart while jobs run and fail: once it is back every job runs, and the queue stops", async () => {
  const sent: string[] = [];
  const warnings: string[] = [];
  const q = await queue(sent, warnings);
  const ids = await enqueue(120);
  assert.ok(await eventually(() => sent.length >= 10, 30_000), "jobs were running when the database went away");
  await server.server.stop("fast");
  await sleep(1500);
  await server.restart();
  assert.ok(
    await eventually(async () => (await jobsLeft()) === 0, 60_000),
    `every job done once the database is back (left: ${await jobsLeft()}, sent ${sent.length})`,
  );
  assert.deepEqual(
    ids.filter((id) => !sent.includes(id)),
    [],
    "every receipt sent",
  );
  // A bound against a hang, not a speed claim: the runner stops cleanly now that the database is here.
  const stopped = await Promise.race([q.stop(10_000).then(() => "stopped"), sleep(20_000).then(() => "hung")]);
  assert.equal(stopped, "stopped");
  assert.deepEqual(
    warnings.filter((w) => w.includes("did not stop in time")),
    [],
    "a clean stop",
  );
});
