/**
 * The queue's pool on a real PostgreSQL: a connection the server ends while
 * a client is checked out (by graphile-worker, by the heartbeat, by anyone
 * who adds no listener of their own) is logged, not an uncaught exception.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import pino from "pino";
import { adminQuery, startTestServer, type TestServer } from "../../../packages/database/src/testing/test-server.js";
import { createQueuePool } from "./queue-pool.js";

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(async () => {
  await server?.destroy();
});

test("a checked-out client whose connection the server ends: logged, the process goes on, the pool serves again", async () => {
  const lines: { msg: string; err?: { message: string } }[] = [];
  const logger = pino({ level: "warn" }, { write: (line: string) => lines.push(JSON.parse(line)) });
  let losses = 0;
  const pool = createQueuePool({ connectionString: server.url, max: 2, genericPlans: true, logger, onConnectionLost: () => losses++ });
  const uncaught: unknown[] = [];
  const onUncaught = (e: unknown) => uncaught.push(e);
  // Without the pool's listener, the client's `error` would be thrown from the socket's event: catch it here so that it fails this test, not the run.
  process.prependListener("uncaughtException", onUncaught);
  try {
    const client = await pool.connect();
    const { rows } = await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
    // Not events.once: it would listen for `error` itself, which is what is under test.
    const ended = new Promise((resolve) => client.once("end", resolve));
    await adminQuery(server.url, "SELECT pg_terminate_backend($1)", [rows[0]!.pid]);
    await ended;
    client.release(true);
    assert.deepEqual(uncaught, [], "no uncaught exception");
    assert.ok(
      lines.some((l) => l.msg === "queue connection lost" && /terminat/i.test(l.err?.message ?? "")),
      `the loss was logged: ${JSON.stringify(lines)}`,
    );
    assert.ok(losses >= 1, "and reported, for the queue to retire its runner");
    // And the pool still serves: a new connection.
    const again = await pool.query<{ one: number }>("SELECT 1 AS one");
    assert.equal(again.rows[0]!.one, 1);
  } finally {
    process.removeListener("uncaughtException", onUncaught);
    await pool.end();
  }
});
