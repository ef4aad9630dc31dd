/**
 * The service stops while the database is away, with a job running and
 * others fetched and waiting in the runner's local queue (graphile-worker
 * 0.18.0): stop() must return within its budget, the process must end
 * cleanly, not on an uncaught error, and every receipt must be sent once
 * the database is back, by a runner started afterwards.
 *
 * graphile-worker releases its local queue as the runner stops; from its
 * WAITING mode (jobs fetched, no runner free) that returns the jobs in a
 * promise it then fails to track (its `background` throws: released, with
 * nothing in the background), so when the return fails (the database is
 * gone) the rejection was unhandled, and a service ended on it
 * (test/e2e/failover.test.ts, (c), caught it). patches/graphile-worker
 * handles that promise (its rejection logged by graphile-worker's logger);
 * unreturned-jobs.ts still tolerates the rejection should the patch be
 * missing. The jobs stay locked by the stopped runner's id until a live
 * runner's heartbeat releases them. And
 * graphile-worker, as patched, retries for minutes the writes the database
 * cannot take: unbounded, stop() waited for them (queue.ts, `stop`).
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import pino from "pino";
import { adminQuery, eventually, type TestServer } from "../../../packages/database/src/testing/test-server.js";
import { startQueue, type Queue } from "./queue.js";
import { startQueueDatabase } from "./testing/queue-database.js";

const stopWhileAway = fileURLToPath(new URL("./testing/stop-while-away.ts", import.meta.url));

let server: TestServer;
let child: ChildProcess | undefined;
let later: Queue | undefined;
before(async () => {
  server = await startQueueDatabase();
});
after(async () => {
  child?.kill("SIGKILL");
  if (later) await Promise.race([later.stop(1000), sleep(5000)]);
  await server?.destroy();
});

test("stopped while the database is away, jobs waiting in the local queue: stop() returns, the process ends cleanly, and a runner started later sends every receipt", async () => {
  const orders = Array.from({ length: 5 }, () => randomUUID());
  for (const id of orders) await adminQuery(server.url, "SELECT receipts.enqueue_receipt($1)", [id]);
  const proc = spawn(process.execPath, ["--import", "tsx", stopWhileAway, server.url], { stdio: ["pipe", "pipe", "inherit"] });
  child = proc;
  let out = "";
  proc.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  const exited = once(proc, "exit") as Promise<[number | null, NodeJS.Signals | null]>;

  assert.ok(await eventually(() => out.includes("holding "), 60_000), `the runner took a job: ${out}`);
  // Its local queue fetched the others: locked by its pool, waiting for the one runner.
  const locked = async () =>
    Number((await adminQuery<{ n: string }>(server.url, "SELECT count(*) AS n FROM receipts._private_jobs WHERE locked_by IS NOT NULL"))[0]!.n);
  assert.ok(await eventually(async () => (await locked()) >= 3, 10_000), "jobs wait in the local queue");

  await server.stop();
  proc.stdin!.write("stop\n");
  // A bound against a hang (the budget is 1 s), not a speed claim.
  const ended = await Promise.race([exited, sleep(20_000).then(() => "hung" as const)]);
  assert.notEqual(ended, "hung", `the process stopped while the database was away: ${out}`);
  child = undefined;
  assert.doesNotMatch(out, /crashed:/);
  assert.deepEqual(ended, [0, null], `a clean exit after stop() (its output: ${out})`);
  assert.match(out, /Failed to return jobs from the released local queue/, "the local queue's jobs could not be returned, and graphile-worker said so");
  assert.doesNotMatch(out, /could not hand its local jobs back/, "no unhandled rejection: the patch keeps graphile-worker's promise");
  assert.match(out, /did not stop in time/, "the running job was left to the heartbeat, and the log says so");

  await server.restart();
  // The next start: its heartbeat releases what the stopped runner held once that runner's beats expire.
  const ran: string[] = [];
  later = await startQueue({
    connectionString: server.url,
    concurrency: 2,
    pollIntervalMs: 100,
    heartbeatIntervalMs: 200,
    logger: pino({ level: "silent" }),
    sendReceipt: async (payload) => {
      ran.push((payload as { orderId: string }).orderId);
    },
  });
  const left = async () => Number((await adminQuery<{ n: string }>(server.url, "SELECT count(*) AS n FROM receipts._private_jobs"))[0]!.n);
  assert.ok(await eventually(async () => (await left()) === 0, 60_000), `every job done (left: ${await left()})`);
  assert.deepEqual([...ran].sort(), [...orders].sort(), "every receipt sent once, by the runner started after the stop");
});
