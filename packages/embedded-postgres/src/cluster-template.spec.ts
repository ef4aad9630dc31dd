import assert from "node:assert/strict";
import { mkdirSync, readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { copyCluster } from "./cluster-template.js";
import { startEmbeddedPostgres } from "./index.js";
import { unprivilegedUser } from "./run-as-user.js";
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

  /** Every file under `dir`, with its size and the bytes the file system holds for it. */
  const files = (dir: string) =>
    readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => {
        const path = join(e.parentPath, e.name);
        const st = statSync(path);
        return { path: path.slice(dir.length + 1), size: st.size, allocated: st.blocks * 512, mode: st.mode & 0o777, uid: st.uid };
      });

  it("the template keeps its pages of zeros as holes, and a copy keeps them too: the same bytes, less written", () => {
    const templates = join(tmp.path, "templates");
    const [template] = readdirSync(templates);
    assert.ok(template, "the first test made a template");
    const source = join(templates, template);
    const wal = files(join(source, "pg_wal")).filter((f) => /^[0-9A-F]{24}$/.test(f.path));
    assert.equal(wal.length, 1, "initdb's one WAL segment");
    assert.ok(wal[0]!.allocated < wal[0]!.size / 2, `the WAL segment's zeros are holes: ${wal[0]!.allocated} of ${wal[0]!.size} bytes allocated`);

    const copy = join(tmp.path, "copy");
    mkdirSync(copy, { mode: 0o700 });
    copyCluster(source, copy, unprivilegedUser());
    const copied = new Map(files(copy).map((f) => [f.path, f]));
    const originals = files(source);
    assert.equal(copied.size, originals.length, "every file copied");
    for (const f of originals) {
      const c = copied.get(f.path);
      assert.ok(c, `${f.path} copied`);
      assert.deepEqual([c.size, c.mode, c.uid], [f.size, f.mode, f.uid], `${f.path}: size, mode and owner kept`);
      assert.ok(readFileSync(join(copy, f.path)).equals(readFileSync(join(source, f.path))), `${f.path}: the same bytes`);
    }
    const allocated = (list: { allocated: number }[]) => list.reduce((n, f) => n + f.allocated, 0);
    if (process.platform === "linux") assert.ok(allocated([...copied.values()]) <= allocated(originals) * 1.1, "GNU cp kept the holes");
  });

  it("without a cp that copies sparse files, the copy is made in node: the same files, modes and owners", () => {
    const [template] = readdirSync(join(tmp.path, "templates"));
    const source = join(tmp.path, "templates", template!);
    const copy = join(tmp.path, "copy-in-node");
    mkdirSync(copy, { mode: 0o700 });
    copyCluster(source, copy, unprivilegedUser(), "no-such-cp-for-this-test");
    const copied = new Map(files(copy).map((f) => [f.path, f]));
    for (const f of files(source)) {
      const c = copied.get(f.path);
      assert.ok(c, `${f.path} copied`);
      assert.deepEqual([c.size, c.mode, c.uid], [f.size, f.mode, f.uid], `${f.path}: size, mode and owner kept`);
    }
    assert.equal(statSync(join(copy, "base")).mode & 0o777, 0o700, "folders keep PostgreSQL's mode");
  });
});
