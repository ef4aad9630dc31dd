/**
 * A fetch whose answer is lost: graphile-worker's statement that locks the
 * next jobs for this runner commits, and the connection dies before its
 * answer arrives (the server is killed, or the path breaks, between the
 * commit and the reply). The jobs are then locked by a runner that is
 * alive, beating, and does not know it holds them: graphile-worker alone
 * would leave them for 4 hours, and the heartbeat releases only dead
 * runners' jobs. Every such receipt must still be sent (docs/outbox.md,
 * "A fetch whose answer is lost").
 *
 * The loss is made, not waited for: a TCP proxy between the queue and a real
 * PostgreSQL lets the fetch run and commit, then resets the connection
 * instead of delivering the answer.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, test } from "node:test";
import pino from "pino";
import { startTcpProxy, type TcpProxy } from "../../../packages/database/src/testing/tcp-proxy.js";
import { adminQuery, eventually, type TestServer } from "../../../packages/database/src/testing/test-server.js";
import { startQueue, type Queue } from "./queue.js";
import { startQueueDatabase } from "./testing/queue-database.js";

let server: TestServer;
let proxy: TcpProxy;
let queue: Queue | undefined;

before(async () => {
  server = await startQueueDatabase();
  const { hostname, port } = new URL(server.url);
  // graphile-worker's fetch (sql/getJobs.js): the one statement that locks jobs for a runner.
  proxy = await startTcpProxy({ host: hostname, port: Number(port) }, { loseAnswerTo: { statement: (sql) => sql.includes("attempts = jobs.attempts + 1") } });
});
after(async () => {
  // Bounded, so that a queue that cannot stop fails its test instead of holding the file.
  if (queue) await Promise.race([queue.stop(1000), sleep(5000)]);
  await proxy?.close();
  await server?.destroy();
});

const lockedJobs = async () =>
  Number((await adminQuery<{ n: string }>(server.url, "SELECT count(*) AS n FROM receipts._private_jobs WHERE locked_by IS NOT NULL"))[0]!.n);

test("jobs locked by a fetch whose answer was lost are run, by the same live process", async () => {
  const ids = Array.from({ length: 3 }, () => randomUUID());
  for (const id of ids) await adminQuery(server.url, "SELECT receipts.enqueue_receipt($1)", [id]);
  const sent: string[] = [];
  const warnings: string[] = [];
  queue = await startQueue({
    connectionString: proxy.via(server.url),
    concurrency: 2,
    pollIntervalMs: 100,
    heartbeatIntervalMs: 200,
    logger: pino({ level: "warn" }, { write: (line: string) => warnings.push(line) }),
    sendReceipt: async (payload) => {
      sent.push((payload as { orderId: string }).orderId);
    },
  });
  // The runner's first fetch locked the three jobs (local queue of 3), and its answer was lost.
  assert.ok(await eventually(() => proxy.lostAnswers.length === 1, 10_000), "the first fetch's answer was lost");
  assert.equal(proxy.lostAnswers[0]!.rows, 3, "the lost answer carried the three jobs it had locked");
  assert.ok(
    await eventually(() => sent.length >= ids.length, 20_000),
    `every receipt sent (sent ${sent.length} of ${ids.length}; jobs still locked: ${await lockedJobs()})\n${warnings.join("")}`,
  );
  assert.deepEqual([...sent].sort(), [...ids].sort(), "each receipt once");
  // A job is completed (its row deleted) after its task returns, in its own statement: the last
  // receipt can be sent a moment before its row is gone.
  assert.ok(await eventually(async () => (await lockedJobs()) === 0, 10_000), `jobs still locked once every receipt was sent: ${await lockedJobs()}`);
});
