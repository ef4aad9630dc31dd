/**
 * A runner that stops by itself while jobs wait in its local queue, with
 * the database gone (graphile-worker 0.18.0): the process must go on, and
 * every receipt must be sent once the database is back.
 *
 * graphile-worker releases its local queue as the runner stops; from its
 * WAITING mode (jobs fetched, no runner free) that returns the jobs in a
 * promise it then fails to track (its `background` throws: released, with
 * nothing in the background), so when the return fails (the database is
 * gone) the rejection is unhandled, and a service ends on it
 * (test/e2e/failover.test.ts, (c), caught it). queue.ts logs that one
 * rejection instead (unreturned-jobs.ts); the jobs stay locked by the
 * stopped runner's id until the heartbeat releases them.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { adminQuery, eventually, type TestServer } from "../../../packages/database/src/testing/test-server.js";
import { startQueueDatabase } from "./testing/queue-database.js";

const holder = fileURLToPath(new URL("./testing/hold-then-release.ts", import.meta.url));

let server: TestServer;
let child: ChildProcess | undefined;
before(async () => {
  server = await startQueueDatabase();
});
after(async () => {
  child?.kill("SIGKILL");
  await server?.destroy();
});

test("the database gone while jobs wait in the local queue: the process goes on, and every receipt is sent once it is back", async () => {
  const orders = Array.from({ length: 5 }, () => randomUUID());
  for (const id of orders) await adminQuery(server.url, "SELECT receipts.enqueue_receipt($1)", [id]);
  const proc = spawn(process.execPath, ["--import", "tsx", holder, server.url], { stdio: ["pipe", "pipe", "inherit"] });
  child = proc;
  let out = "";
  proc.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  let exitCode: number | null | undefined;
  proc.once("exit", (code) => (exitCode = code));

  assert.ok(await eventually(() => out.includes("holding "), 60_000), `the runner took a job: ${out}`);
  // Its local queue fetched the others: locked by its pool, waiting for the one runner.
  const locked = async () =>
    Number((await adminQuery<{ n: string }>(server.url, "SELECT count(*) AS n FROM receipts._private_jobs WHERE locked_by IS NOT NULL"))[0]!.n);
  assert.ok(await eventually(async () => (await locked()) >= 3, 10_000), "jobs wait in the local queue");

  await server.stop();
  // The first job finishes (its completion cannot be written), the runner takes the second, which waits: the rest stay in the local queue.
  proc.stdin!.write("release\n");
  // The first job's completion fails, the runner stops, and its local queue's jobs cannot be handed back:
  // the moment graphile-worker loses the rejection.
  assert.ok(
    await eventually(() => out.includes("could not hand its local jobs back") || out.includes("crashed:") || exitCode !== undefined, 30_000),
    `the runner stopped with jobs in its local queue: ${out}`,
  );
  assert.doesNotMatch(out, /crashed:/);
  assert.equal(exitCode, undefined, `the process is still running (its output: ${out})`);

  proc.stdin!.write("free\n");
  await server.restart();
  // Every receipt sent: the jobs the stopped runner kept locked are released by the heartbeat and run.
  const left = async () => Number((await adminQuery<{ n: string }>(server.url, "SELECT count(*) AS n FROM receipts._private_jobs"))[0]!.n);
  assert.ok(await eventually(async () => (await left()) === 0, 60_000), `every job done (left: ${await left()}; output: ${out})`);
  for (const id of orders) assert.ok(out.includes(`ran {"orderId":"${id}"}`), `${id} sent`);
  assert.equal(exitCode, undefined, "still running");
  proc.kill("SIGTERM");
  await once(proc, "exit").catch(() => {});
  child = undefined;
});
