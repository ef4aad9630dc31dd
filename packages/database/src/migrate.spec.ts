import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createScope, runInScope } from "@platform/resilience";
import { type Database, MigrationChangedError, createDatabase, migrate } from "./index.js";
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
    const db = createDatabase({ name: "migrate-db", connectionString: pg.url, minBudgetMs: 5, maxConnections: 2, fallbackTimeoutMs: 50 });
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
    assert.deepEqual(
      recorded.map((r) => r.name),
      first.applied,
    );
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

  it("fails, naming the file, when an applied migration was edited; restoring it lets the run through", async () => {
    const edited = mkdtempSync(join(tmpdir(), "migrations-edited-"));
    try {
      writeFileSync(join(edited, "0001-create.sql"), "CREATE TABLE things (id int PRIMARY KEY);");
      await migrate(open(), { schema: "edited", directory: edited });
      writeFileSync(join(edited, "0001-create.sql"), "CREATE TABLE things (id int PRIMARY KEY, name text);");
      writeFileSync(join(edited, "0002-more.sql"), "CREATE TABLE more (id int);");
      await assert.rejects(migrate(open(), { schema: "edited", directory: edited }), (e: unknown) => {
        assert.ok(e instanceof MigrationChangedError);
        assert.equal(e.file, "0001-create.sql");
        assert.match(e.message, /^migrate edited: 0001-create\.sql was changed after it was applied .*new migration file$/);
        return true;
      });
      // Nothing after the edited file ran: the schema is exactly as before.
      assert.deepEqual(await adminQuery(pg.url, "SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'edited' AND tablename = 'more'"), [{ n: 0 }]);
      writeFileSync(join(edited, "0001-create.sql"), "CREATE TABLE things (id int PRIMARY KEY);");
      assert.deepEqual((await migrate(open(), { schema: "edited", directory: edited })).applied, ["0002-more.sql"]);
    } finally {
      rmSync(edited, { recursive: true, force: true });
    }
  });

  it("records the checksum of files applied before checksums existed, then guards them", async () => {
    const legacy = mkdtempSync(join(tmpdir(), "migrations-legacy-"));
    try {
      writeFileSync(join(legacy, "0001-create.sql"), "CREATE TABLE old (id int);");
      // What an older platform left: the file applied, its row without a checksum column.
      await adminQuery(
        pg.url,
        "CREATE SCHEMA legacy; CREATE TABLE legacy.old (id int); CREATE TABLE legacy.schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now()); INSERT INTO legacy.schema_migrations (name) VALUES ('0001-create.sql')",
      );
      assert.deepEqual((await migrate(open(), { schema: "legacy", directory: legacy })).applied, []);
      const [row] = await adminQuery<{ checksum: string }>(pg.url, "SELECT checksum FROM legacy.schema_migrations");
      assert.match(row!.checksum, /^[0-9a-f]{64}$/);
      writeFileSync(join(legacy, "0001-create.sql"), "CREATE TABLE old (id bigint);");
      await assert.rejects(migrate(open(), { schema: "legacy", directory: legacy }), MigrationChangedError);
    } finally {
      rmSync(legacy, { recursive: true, force: true });
    }
  });

  it("runs a file marked no-transaction outside a transaction (CREATE INDEX CONCURRENTLY), once, and leaves no session state behind", async () => {
    const concurrent = mkdtempSync(join(tmpdir(), "migrations-concurrent-"));
    try {
      writeFileSync(join(concurrent, "0001-create.sql"), "CREATE TABLE big (id int, label text);");
      writeFileSync(
        join(concurrent, "0002-index.sql"),
        "-- migrate: no-transaction\nCREATE INDEX CONCURRENTLY IF NOT EXISTS big_label ON concurrent.big (label);\n",
      );
      const db = createDatabase({ name: "migrate-concurrent", connectionString: pg.url, minBudgetMs: 5, maxConnections: 1, fallbackTimeoutMs: 5000 });
      dbs.push(db);
      const runs = await Promise.all([
        migrate(db, { schema: "concurrent", directory: concurrent }),
        migrate(pg.url, { schema: "concurrent", directory: concurrent }),
      ]);
      assert.deepEqual(runs.flatMap((r) => r.applied).sort(), ["0001-create.sql", "0002-index.sql"], "each file applied once across both runs");
      assert.deepEqual(await adminQuery(pg.url, "SELECT indexname FROM pg_indexes WHERE schemaname = 'concurrent' AND tablename = 'big'"), [
        { indexname: "big_label" },
      ]);
      // The same pooled connection serves the next caller with default settings and no lock held.
      const state = await db.transaction(
        async (tx) =>
          (
            await tx.query(
              "SELECT current_setting('search_path') AS path, (SELECT count(*)::int FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()) AS locks",
            )
          ).rows[0],
      );
      assert.deepEqual(state, { path: '"$user", public', locks: 0 }, "no search_path or lock outlives the migration on the pooled connection");
      // Without the marker the same statement is refused by PostgreSQL inside the migration's transaction.
      writeFileSync(join(concurrent, "0003-unmarked.sql"), "CREATE INDEX CONCURRENTLY IF NOT EXISTS big_id ON concurrent.big (id);");
      await assert.rejects(migrate(db, { schema: "concurrent", directory: concurrent }), /cannot run inside a transaction block/);
    } finally {
      rmSync(concurrent, { recursive: true, force: true });
    }
  });
});
