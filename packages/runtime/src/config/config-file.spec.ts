import { test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError, readEnv } from "./config.js";

/** A scratch directory of secret files, removed after the test. */
function secrets(t: { after(fn: () => void): void }, files: Record<string, string>): (name: string) => string {
  const dir = mkdtempSync(join(tmpdir(), "secrets-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
  return (name) => join(dir, name);
}

function problems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof ConfigError, String(e));
    return e.problems;
  }
  return assert.fail("expected a ConfigError");
}

test("<VAR>_FILE gives any variable from a file, its trailing newline dropped", (t) => {
  const path = secrets(t, { level: "debug\n", port: "8099", url: "http://stock:8083\r\n" });
  const c = readEnv({ LOG_LEVEL_FILE: path("level"), PORT_FILE: path("port"), STOCK_URL_FILE: path("url") }, (r) => ({
    level: r.string("LOG_LEVEL"),
    port: r.int("PORT", 1),
    url: r.url("STOCK_URL"),
  }));
  assert.deepEqual(c, { level: "debug", port: 8099, url: "http://stock:8083" });
});

test("a missing or unreadable file is an error naming the variable and the path, not the default", (t) => {
  const path = secrets(t, { empty: "\n", locked: "x" });
  if (process.getuid?.() !== 0) chmodSync(path("locked"), 0o000);
  const found = problems(() =>
    readEnv({ PORT_FILE: path("nope"), LOG_LEVEL_FILE: path("empty") }, (r) => ({ port: r.int("PORT", 8080), level: r.string("LOG_LEVEL", "info") })),
  );
  assert.deepEqual(found, [`PORT_FILE names ${path("nope")}, which cannot be read (ENOENT)`, `LOG_LEVEL_FILE names ${path("empty")}, which is empty`]);
  if (process.getuid?.() !== 0) {
    assert.deepEqual(
      problems(() => readEnv({ X_FILE: path("locked") }, (r) => r.string("X", "y"))),
      [`X_FILE names ${path("locked")}, which cannot be read (EACCES)`],
    );
  }
});

test("a variable set both ways is refused: which one wins would be a guess", (t) => {
  const path = secrets(t, { port: "1" });
  assert.deepEqual(
    problems(() => readEnv({ PORT: "2", PORT_FILE: path("port") }, (r) => r.int("PORT", 3))),
    ["PORT and PORT_FILE are both set; set one"],
  );
});

test("postgresUrl takes its password from DATABASE_PASSWORD_FILE, escaped, and never echoes it", (t) => {
  const path = secrets(t, { pw: "s3cr/t@:x\n" });
  const url = readEnv({ DATABASE_URL: "postgres://orders@postgres:5432/platform", DATABASE_PASSWORD_FILE: path("pw") }, (r) =>
    r.postgresUrl("DATABASE_URL", undefined, { password: "DATABASE_PASSWORD" }),
  );
  const u = new URL(url);
  assert.equal(u.username, "orders");
  assert.equal(decodeURIComponent(u.password), "s3cr/t@:x");
  assert.equal(u.host, "postgres:5432");
  assert.equal(u.pathname, "/platform");
  // Without the password variable the URL is used as given.
  assert.equal(
    readEnv({ DATABASE_URL: "postgres://orders@h/db" }, (r) => r.postgresUrl("DATABASE_URL", undefined, { password: "DATABASE_PASSWORD" })),
    "postgres://orders@h/db",
  );
  // The whole URL can come from a file too (Kubernetes mounts the platform-database Secret).
  const file = secrets(t, { url: "postgres://stock:pw@db.example:5432/platform\n" });
  assert.equal(
    readEnv({ DATABASE_URL_FILE: file("url") }, (r) => r.postgresUrl("DATABASE_URL")),
    "postgres://stock:pw@db.example:5432/platform",
  );
  const twice = problems(() =>
    readEnv({ DATABASE_URL: "postgres://o:inline@h/db", DATABASE_PASSWORD: "other" }, (r) =>
      r.postgresUrl("DATABASE_URL", undefined, { password: "DATABASE_PASSWORD" }),
    ),
  );
  assert.deepEqual(twice, ["DATABASE_URL already holds a password; leave it out of the URL or unset DATABASE_PASSWORD"]);
  assert.doesNotMatch(twice.join(" "), /inline|other/);
});
