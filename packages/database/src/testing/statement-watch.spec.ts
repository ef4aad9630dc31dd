/**
 * The statement watcher counts each statement once. PostgreSQL sets
 * pg_stat_activity.query_start again at each message of the extended
 * protocol, so a watcher that told statements apart by it saw some
 * parameterized statements twice (11 of 400 when polled without pause),
 * and a test built on it failed once with "the watcher saw 2 slow
 * statements" for one. Here the gap is made, not waited for.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { watchStatements } from "./statement-watch.js";
import { startTestServer, type TestServer } from "./test-server.js";

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(async () => {
  await server?.destroy();
});

test("a statement whose Execute comes after its Bind is one statement, from its first start", async () => {
  // node-postgres' protocol writer on a connection of its own, to hold the statement between its
  // messages as a loaded client or server can: Parse and Bind now, Execute 300 ms later. The backend
  // shows the statement active all along, and sets its query_start again at the Execute.
  const url = new URL(server.url);
  const wire = new pg.Connection() as unknown as ProtocolConnection;
  const next = (event: string) =>
    new Promise<void>((resolve, reject) => {
      wire.once(event, () => resolve());
      wire.once("errorMessage", (e) => reject(new Error(String((e as { message?: string }).message))));
    });
  const connected = next("connect");
  wire.connect(Number(url.port), url.hostname);
  await connected;
  const ready = next("readyForQuery");
  wire.startup({ user: decodeURIComponent(url.username), database: url.pathname.slice(1), application_name: "watched" });
  await ready;
  const watch = watchStatements(server.url, { applicationName: "watched", queryContains: "pg_sleep" });
  await watch.polling;
  try {
    wire.parse({ text: "SELECT pg_sleep($1) /* held between Bind and Execute */", types: [] });
    wire.bind({ values: ["0.2"] });
    wire.describe({ type: "P" });
    wire.flush();
    await sleep(300);
    const done = next("readyForQuery");
    wire.execute({ rows: 0 });
    wire.sync();
    await done;
  } finally {
    wire.end();
  }
  const seen = await watch.stop();
  assert.equal(seen.length, 1, `one statement, seen as: ${JSON.stringify(seen)}`);
  const [s] = seen;
  assert.ok(s!.goneBy !== undefined);
  // From its first start (the Bind), not from the Execute: 0.3 s held plus the 0.2 s sleep.
  assert.ok(s!.ranAtLeastMs >= 400, `ran at least ${s!.ranAtLeastMs} ms`);
});

/** The part of node-postgres' Connection (its protocol writer, exported by pg) this test drives. */
interface ProtocolConnection {
  connect(port: number, host: string): void;
  startup(config: Record<string, string>): void;
  parse(q: { text: string; types: unknown[] }): void;
  bind(c: { values: unknown[] }): void;
  describe(m: { type: string }): void;
  execute(c: { rows: number }): void;
  flush(): void;
  sync(): void;
  end(): void;
  once(event: string, listener: (arg: unknown) => void): void;
}
