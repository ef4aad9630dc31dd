import assert from "node:assert/strict";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { startEmbeddedPostgres } from "./index.js";
import { makeTempDir } from "./testing/temp-dir.js";
import { queryOnce as query } from "./testing/query-once.js";

describe("startEmbeddedPostgres with a folder of cluster templates", () => {
  const tmp = makeTempDir("embedded-pg-template-");
  after(() => tmp.remove());

  it("runs initdb once for the template; each new data directory is a copy that serves and keeps its own data", async () => {
    const templates = join(tmp.path, "templates");
    const logs: string[][] = [];
    const clusters: string[] = [];
    for (const name of ["a", "b"]) {
      const lines: string[] = [];
      logs.push(lines);
      const dataDir = join(tmp.path, name);
      const db = await startEmbeddedPostgres({ dataDir, templates, onLog: (l) => lines.push(l) });
      try {
        await query(db.url, `CREATE TABLE only_in_${name} (v int)`);
        const tables = await query(db.url, "SELECT tablename FROM pg_tables WHERE tablename LIKE 'only_in_%' ORDER BY 1");
        assert.deepEqual(
          tables.rows.map((r: { tablename: string }) => r.tablename),
          [`only_in_${name}`],
          "what one copy writes stays in it",
        );
      } finally {
        await db.stop();
      }
      assert.equal(statSync(dataDir).mode & 0o777, 0o700);
      assert.equal(statSync(join(dataDir, "base")).mode & 0o777, 0o700, "folders keep PostgreSQL's mode");
      clusters.push(...readdirSync(templates));
    }
    const initdbRan = (lines: string[]) => lines.some((l) => /The files belonging to this database system will be owned by user/.test(l));
    assert.equal(initdbRan(logs[0]!), true, "the first start makes the template with initdb");
    assert.equal(initdbRan(logs[1]!), false, "the second copies it");
    assert.deepEqual([...new Set(clusters)].length, 1, `one template: ${clusters.join(", ")}`);
  });
});
