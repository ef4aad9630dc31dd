/**
 * Jobs of a runner that died are run by a live one (docs/outbox.md, "A
 * runner that dies"), on a real PostgreSQL: a runner process holding a job
 * is killed with SIGKILL, and the job is completed by the live runners
 * within a bounded number of their heartbeats, instead of after
 * graphile-worker's 4-hour lock timeout.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import pino from "pino";
import { adminQuery, eventually, type TestServer } from "../../../packages/database/src/testing/test-server.js";
import { startQueueDatabase } from "./testing/queue-database.js";
import { heartbeatsToExpiry, startQueue, type Queue } from "./queue.js";

const holdAJob = fileURLToPath(new URL("./testing/hold-a-job.ts", import.meta.url));
/** Short, so that the test sees several expiries; the bounds below count heartbeats, not milliseconds. */
const heartbeatIntervalMs = 100;

let server: TestServer;
before(async () => {
  server = await startQueueDatabase();
});
after(async () => {
  await server?.destroy();
});

const jobsOf = (orderId: string) =>
  adminQuery<{ locked_by: string | null }>(server.url, "SELECT locked_by FROM receipts._private_jobs WHERE payload->>'orderId' = $1", [orderId]);
const runnerRows = () => adminQuery<{ pool_id: string }>(server.url, "SELECT pool_id FROM receipts.queue_runners ORDER BY pool_id");

/** Starts hold-a-job.ts and resolves once it is running `orderId`'s job. */
async function startHolder(orderId: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", holdAJob, server.url, String(heartbeatIntervalMs)], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  const exited = once(child, "exit");
  const holding = eventually(() => out.includes(`"orderId":"${orderId}"`), 60_000);
  const ok = await Promise.race([holding, exited.then(() => false)]);
  assert.ok(ok, `the holder did not take the job (its output: ${out})`);
  return child;
}

interface LiveRunner {
  queue: Queue;
  ran: string[];
  /** released[i]: the pool ids released at heartbeat i + 1. */
  released: string[][];
}

async function startLiveRunner(): Promise<LiveRunner> {
  const r: LiveRunner = { ran: [], released: [], queue: undefined as unknown as Queue };
  r.queue = await startQueue({
    connectionString: server.url,
    concurrency: 2,
    pollIntervalMs: heartbeatIntervalMs,
    heartbeatIntervalMs,
    logger: pino({ level: "silent" }),
    sendReceipt: async (payload) => {
      r.ran.push((payload as { orderId: string }).orderId);
    },
    onHeartbeat: (released) => r.released.push([...released]),
  });
  return r;
}

describe("a runner killed while it holds a job", () => {
  test("its job is released by a live runner within heartbeatsToExpiry + 2 of its heartbeats and run once, with two live replicas", async () => {
    const orderId = randomUUID();
    await adminQuery(server.url, "SELECT receipts.enqueue_receipt($1)", [orderId]);
    const holder = await startHolder(orderId);
    // It has beaten at least once: its row exists, and its job is locked by that id.
    let deadPool = "";
    assert.ok(
      await eventually(async () => {
        const [job] = await jobsOf(orderId);
        deadPool = job?.locked_by ?? "";
        return deadPool !== "" && (await runnerRows()).some((r) => r.pool_id === deadPool);
      }, 30_000),
      "the holder's job is locked by its registered pool",
    );
    const exited = once(holder, "exit");
    holder.kill("SIGKILL");
    await exited;
    // graphile-worker alone would leave it locked for 4 hours.
    assert.deepEqual(await jobsOf(orderId), [{ locked_by: deadPool }]);

    const live = [await startLiveRunner(), await startLiveRunner()];
    try {
      assert.ok(await eventually(async () => (await jobsOf(orderId)).length === 0, 60_000), "the job was completed");
      const releasedAt = live.map((r) => r.released.findIndex((ids) => ids.includes(deadPool)) + 1).filter((tick) => tick > 0);
      assert.equal(releasedAt.length >= 1, true, `a live runner released ${deadPool}: ${JSON.stringify(live.map((r) => r.released))}`);
      assert.ok(
        Math.min(...releasedAt) <= heartbeatsToExpiry + 2,
        `released at heartbeat ${Math.min(...releasedAt)}, expected at most ${heartbeatsToExpiry + 2}`,
      );
      // Run once, by one of the live runners; nobody released anything but the dead runner's jobs.
      assert.deepEqual(
        live.flatMap((r) => r.ran).filter((id) => id === orderId),
        [orderId],
      );
      assert.deepEqual([...new Set(live.flatMap((r) => r.released.flat()))], [deadPool]);
      // The dead runner's row is gone; the two live ones are registered.
      const rows = (await runnerRows()).map((r) => r.pool_id);
      assert.equal(rows.includes(deadPool), false);
      assert.equal(rows.length, 2);
    } finally {
      for (const r of live) await r.queue.stop(10_000);
    }
    // Stopped cleanly: their rows are removed, nothing left locked.
    assert.deepEqual(await runnerRows(), []);
  });
});

describe("receipts.release_dead_runners", () => {
  test("releases jobs of stale and unregistered runners only, never a job locked less than the expiry ago or by a live runner", async () => {
    const ids = { stale: randomUUID(), ghost: randomUUID(), fresh: randomUUID(), live: randomUUID() };
    for (const id of Object.values(ids)) await adminQuery(server.url, "SELECT receipts.enqueue_receipt($1)", [id]);
    const lock = (orderId: string, pool: string, ago: string) =>
      adminQuery(server.url, `UPDATE receipts._private_jobs SET locked_by = $2, locked_at = now() - $3::interval WHERE payload->>'orderId' = $1`, [
        orderId,
        pool,
        ago,
      ]);
    await adminQuery(
      server.url,
      `INSERT INTO receipts.queue_runners (pool_id, heartbeat_at) VALUES ('pool-stale', now() - interval '2 hours'), ('pool-live', now())`,
    );
    await lock(ids.stale, "pool-stale", "2 hours"); // its runner stopped beating
    await lock(ids.ghost, "pool-ghost", "2 hours"); // died before its first beat
    await lock(ids.fresh, "pool-new", "1 second"); // just started, not beaten yet
    await lock(ids.live, "pool-live", "2 hours"); // a long job of a live runner
    const [r] = await adminQuery<{ released: string[] }>(server.url, "SELECT receipts.release_dead_runners(interval '1 hour') AS released");
    assert.deepEqual([...r!.released].sort(), ["pool-ghost", "pool-stale"]);
    const locks = async (orderId: string) => (await jobsOf(orderId))[0]?.locked_by ?? null;
    assert.equal(await locks(ids.stale), null);
    assert.equal(await locks(ids.ghost), null);
    assert.equal(await locks(ids.fresh), "pool-new");
    assert.equal(await locks(ids.live), "pool-live");
    assert.deepEqual(await runnerRows(), [{ pool_id: "pool-live" }]);
    await adminQuery(server.url, "DELETE FROM receipts._private_jobs WHERE payload->>'orderId' = ANY($1)", [Object.values(ids)]);
    await adminQuery(server.url, "DELETE FROM receipts.queue_runners");
  });
});
