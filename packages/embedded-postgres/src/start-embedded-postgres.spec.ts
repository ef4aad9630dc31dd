import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { startEmbeddedPostgres, testClusterTemplates } from "./index.js";
import { isGone, waitUntilGone } from "./testing/process-gone.js";
import { makeTempDir } from "./testing/temp-dir.js";
import { queryOnce as query } from "./testing/query-once.js";

/** A pid that certainly belonged to a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn("true");
  await new Promise((resolve) => child.once("exit", resolve));
  assert.ok(child.pid);
  return child.pid;
}

describe("startEmbeddedPostgres", () => {
  const tmp = makeTempDir("embedded-pg-");
  after(() => tmp.remove());
  // The tests that are not about initdb copy the tests' cluster template (a fifth of initdb's CPU); the first runs initdb.
  const templates = testClusterTemplates;

  it("initialises, serves queries, stops, and reuses the data on the next start", async (t) => {
    const dataDir = join(tmp.path, "reuse");
    let t0 = performance.now();
    const first = await startEmbeddedPostgres({ dataDir });
    const firstMs = performance.now() - t0;
    try {
      assert.match(first.url, /^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/);
      assert.equal((await query(first.url, "SELECT 1 AS one")).rows[0].one, 1);
      await query(first.url, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('from run 1')");
      assert.equal((await query(first.url, "SHOW unix_socket_directories")).rows[0].unix_socket_directories, "");
      assert.equal((await query(first.url, "SHOW max_connections")).rows[0].max_connections, "200");
    } finally {
      await first.stop();
    }
    assert.equal(await first.exited, 0);
    assert.ok(isGone(first.pid));

    t0 = performance.now();
    const second = await startEmbeddedPostgres({ dataDir, port: first.port });
    const secondMs = performance.now() - t0;
    try {
      assert.equal(second.port, first.port);
      assert.deepEqual((await query(second.url, "SELECT v FROM kept")).rows, [{ v: "from run 1" }]);
    } finally {
      await second.stop();
    }
    t.diagnostic(`first init+start ${firstMs.toFixed(0)} ms, second start ${secondMs.toFixed(0)} ms`);
  });

  it("passes extra settings", async () => {
    const server = await startEmbeddedPostgres({ dataDir: join(tmp.path, "settings"), templates, settings: { work_mem: "7MB" } });
    try {
      assert.equal((await query(server.url, "SHOW work_mem")).rows[0].work_mem, "7MB");
    } finally {
      await server.stop();
    }
  });

  it("fails with postgres's own reason when the port is taken", async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const address = blocker.address();
    assert.ok(address && typeof address === "object");
    try {
      await assert.rejects(startEmbeddedPostgres({ dataDir: join(tmp.path, "reuse"), templates, port: address.port }), (err: unknown) => {
        assert.ok(err instanceof Error);
        assert.match(err.message, /start on 127\.0\.0\.1:\d+ .* failed: postgres exited during start/);
        assert.match(err.message, /last log lines[\s\S]*could not bind/);
        return true;
      });
    } finally {
      blocker.close();
    }
  });

  it("names the directory that the postgres user cannot traverse", { skip: process.getuid?.() !== 0 && "only as root" }, async () => {
    const locked = join(tmp.path, "locked");
    mkdirSync(locked, { mode: 0o700 });
    await assert.rejects(
      startEmbeddedPostgres({ dataDir: join(locked, "data") }),
      new RegExp(`data directory .* is not reachable by user \\w+ .* because ${locked} is not traversable`),
    );
  });

  it("stop('immediate') quits, and the next start recovers", async () => {
    const dataDir = join(tmp.path, "immediate");
    const first = await startEmbeddedPostgres({ dataDir, templates });
    await query(first.url, "CREATE TABLE t (v int); INSERT INTO t VALUES (42)");
    await first.stop("immediate");
    assert.ok(isGone(first.pid));
    const second = await startEmbeddedPostgres({ dataDir });
    try {
      assert.deepEqual((await query(second.url, "SELECT v FROM t")).rows, [{ v: 42 }]);
    } finally {
      await second.stop();
    }
  });

  describe("leftover postmaster.pid", () => {
    const dataDir = join(tmp.path, "stale");
    let pidFile = "";
    let running: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
    before(async () => {
      running = await startEmbeddedPostgres({ dataDir, templates });
      pidFile = readFileSync(join(dataDir, "postmaster.pid"), "utf8");
    });
    after(() => running?.stop());

    it("refuses to start a second server on a data dir that a live postgres owns", async () => {
      await assert.rejects(startEmbeddedPostgres({ dataDir }), /a postgres \(pid \d+\) is already running on/);
    });

    it("removes a pid file whose process is dead and starts", async () => {
      await running?.stop();
      const dead = await deadPid();
      writeFileSync(join(dataDir, "postmaster.pid"), pidFile.replace(/^\d+/, String(dead)));
      running = await startEmbeddedPostgres({ dataDir });
      assert.equal((await query(running.url, "SELECT 1 AS one")).rows[0].one, 1);
    });

    it("starts after the postmaster was SIGKILLed (crash recovery)", async () => {
      assert.ok(running);
      process.kill(running.pid, "SIGKILL");
      await running.exited;
      running = await startEmbeddedPostgres({ dataDir });
      assert.equal((await query(running.url, "SELECT 1 AS one")).rows[0].one, 1);
    });
  });

  it("leaves no orphan: postgres stops when its parent is SIGKILLed", async () => {
    const fixture = fileURLToPath(new URL("./testing/start-and-hang.ts", import.meta.url));
    const child = spawn(process.execPath, ["--import", "tsx", fixture, join(tmp.path, "orphan")], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const line = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout.on("data", (c: Buffer) => {
        out += c.toString();
        if (out.includes("\n")) resolve(out.slice(0, out.indexOf("\n")));
      });
      child.once("exit", (code) => reject(new Error(`fixture exited (${code}) before starting postgres`)));
    });
    const { pid, url } = JSON.parse(line) as { pid: number; url: string };
    assert.equal((await query(url, "SELECT 1 AS one")).rows[0].one, 1);

    child.kill("SIGKILL");
    assert.ok(await waitUntilGone(pid, 15_000), `postmaster ${pid} still running 15 s after its parent was killed`);
  });
});
