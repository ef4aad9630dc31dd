import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createScope, runInScope } from "@platform/resilience";
import { type Database, createDatabase, migrate } from "./index.js";
import { type TestServer, adminQuery, startTestServer } from "./testing/test-server.js";

describe("migrate", () => {
  let pg: TestServer;
  let dir: string;
  const dbs: Database[] = [];
  before(async () => {
    pg = await startTestServer();
    dir = mkdtempSync(join(tmpdir(), "migrations-"));
    // Unqualified names land in the migrated schema (search_path).
    writeFileSync(join(dir, "0001-create.sql"), "CREATE TABLE items (id int PRIMARY KEY);\nCREATE TABLE runs (at timestamptz DEFAULT now());");
    writeFileSync(join(dir, "0002-seed.sql"), "INSERT INTO items VALUES (1), (2); INSERT INTO runs DEFAULT VALUES;");
    writeFileSync(join(dir, "0003-slow.sql"), "SELECT pg_sleep(0.3); INSERT INTO runs DEFAULT VALUES;");
    writeFileSync(join(dir, "README.md"), "not a migration");
  });
  after(async () => {
    rmSync(dir, { recursive: true, force: true });
    try {
      await Promise.allSettled(dbs.map((db) => db.close()));
    } finally {
      await pg.destroy();
    }
  });
  const open = () => {
    // A 50 ms request fallback: migrations must not be bound by it (0003 sleeps 300 ms).
    const db = createDatabase({ name: "migrate-db", connectionString: pg.url, maxConnections: 2, fallbackTimeoutMs: 50 });
    dbs.push(db);
    return db;
  };

  it("applies each file once, in order, and is idempotent", async () => {
    const db = open();
    const logs: string[] = [];
    const first = await migrate(db, { schema: "shop", directory: dir, log: (m) => logs.push(m) });
    assert.deepEqual(first.applied, ["0001-create.sql", "0002-seed.sql", "0003-slow.sql"]);
    assert.equal(logs.length, 3);
    const second = await migrate(db, { schema: "shop", directory: dir });
    assert.deepEqual(second.applied, []);
    assert.deepEqual(await adminQuery(pg.url, "SELECT id FROM shop.items ORDER BY id"), [{ id: 1 }, { id: 2 }]);
    assert.deepEqual(await adminQuery(pg.url, "SELECT count(*)::int AS n FROM shop.runs"), [{ n: 2 }]);
    const recorded = await adminQuery<{ name: string }>(pg.url, "SELECT name FROM shop.schema_migrations ORDER BY name");
    assert.deepEqual(recorded.map((r) => r.name), first.applied);
  });

  it("ignores the caller's request scope", async () => {
    const scope = createScope({ timeoutMs: 20, requestId: "r", procedure: "/x" });
    try {
      const result = await runInScope(scope, () => migrate(pg.url, { schema: "scoped", directory: dir }));
      assert.equal(result.applied.length, 3);
    } finally {
      scope.dispose();
    }
  });

  it("applies each file exactly once when several processes migrate at the same time", async () => {
    const runs = await Promise.all([
      migrate(open(), { schema: "race", directory: dir }),
      migrate(open(), { schema: "race", directory: dir }),
      migrate(pg.url, { schema: "race", directory: dir }),
    ]);
    const applied = runs.flatMap((r) => r.applied).sort();
    assert.deepEqual(applied, ["0001-create.sql", "0002-seed.sql", "0003-slow.sql"]);
    assert.deepEqual(await adminQuery(pg.url, "SELECT count(*)::int AS n FROM race.runs"), [{ n: 2 }]);
  });
});
