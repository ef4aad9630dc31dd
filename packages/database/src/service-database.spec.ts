import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, test } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import { startServiceDatabase } from "./service-database.js";
import { type TestServer, adminQuery, startTestServer } from "./testing/test-server.js";

let server: TestServer;
let migrations: string;
before(async () => {
  server = await startTestServer();
  migrations = mkdtempSync(join(tmpdir(), "service-database-"));
  writeFileSync(join(migrations, "0001-stock.sql"), "CREATE TABLE stock.items (sku text PRIMARY KEY);");
});
after(async () => {
  await server.destroy();
  rmSync(migrations, { recursive: true, force: true });
});

function logger() {
  const lines: { level: string; o: object; msg: string }[] = [];
  return {
    lines,
    info: (o: object, msg: string) => lines.push({ level: "info", o, msg }),
    warn: (o: object, msg: string) => lines.push({ level: "warn", o, msg }),
  };
}

const settings = (url: string, budgetMs: number) => ({
  server: { serviceName: "stock" },
  databaseUrl: url,
  dbSchema: "stock",
  dbPoolMax: 2,
  dbStartupTimeoutMs: budgetMs,
});
const deadline = { minBudgetMs: 5, statementReserveMs: 5 };

test("a service's database: its schema's migrations applied once ready, its pool named after the service", async () => {
  const log = logger();
  const { db, startup } = startServiceDatabase(settings(server.url, 30_000), { migrations: pathToFileURL(`${migrations}/`), deadline, logger: log });
  try {
    await startup.ready;
    assert.equal(db.name, "stock-db");
    assert.deepEqual(await adminQuery(server.url, "SELECT name FROM stock.schema_migrations"), [{ name: "0001-stock.sql" }]);
    assert.deepEqual(
      log.lines.map((l) => [l.level, l.msg]),
      [["info", "migrations applied"]],
    );
    const seen = await db.transaction((tx) => tx.query<{ application_name: string }>("SELECT current_setting('application_name') AS application_name"));
    assert.equal(seen.rows[0]?.application_name, "stock");
  } finally {
    startup.cancel();
    await db.close();
  }
});

test("a database that never answers fails start-up as unavailable once its budget is spent, naming the pool", async () => {
  const log = logger();
  const { db, startup } = startServiceDatabase(settings("postgres://nobody@127.0.0.1:1/platform", 300), {
    migrations: pathToFileURL(`${migrations}/`),
    deadline,
    logger: log,
  });
  try {
    const err = await startup.ready.then(
      () => assert.fail("ready"),
      (e: unknown) => ConnectError.from(e),
    );
    assert.equal(err.code, Code.Unavailable);
    assert.match(err.rawMessage, /^stock-db: not reachable within the start-up budget of 300 ms/);
    // A refused connection puts the pool's reconnect gate down: the start-up's attempt waits there,
    // within its budget, and says so once, instead of retrying with a line per attempt.
    assert.ok(
      log.lines.some((l) => l.level === "warn" && /^(waiting for the database|database refuses connections)/.test(l.msg)),
      JSON.stringify(log.lines),
    );
  } finally {
    await db.close();
  }
});
