/**
 * Where `npm test` puts its temporary files (scripts/test-tmpdir.ts): in
 * memory only where that is a tmpfs that runs programs and has room, in a
 * folder that is really the run's own; `TEST_TMPDIR` overrides. Real
 * folders; only the mount table and the free space are given.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chownSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chooseTestTmpdir, describeTmpdir, leftoverAgeMs, minFreeBytes, removeLeftovers, tmpfsOptions, type TmpdirProbe } from "../scripts/test-tmpdir.js";

const uid = process.getuid?.() ?? 0;

function withShm(fn: (shm: string, probe: (mounts: string, free?: number, platform?: NodeJS.Platform) => TmpdirProbe) => void): void {
  const shm = mkdtempSync(join(tmpdir(), "test-tmpdir-shm-"));
  try {
    fn(shm, (mounts, free = minFreeBytes, platform = "linux") => ({ platform, uid, shm, mounts, freeBytes: () => free }));
  } finally {
    rmSync(shm, { recursive: true, force: true });
  }
}

const tmpfsAt = (point: string, options = "rw,nosuid,nodev,relatime,size=24683784k") =>
  `/dev/vda / ext4 rw,relatime,discard 0 0\ntmpfs ${point} tmpfs ${options} 0 0\n`;

test("the mount table: a tmpfs at a point gives its options; another type, or none, gives nothing; the last mount of a point counts", () => {
  assert.deepEqual(tmpfsOptions(tmpfsAt("/dev/shm", "rw,noexec"), "/dev/shm"), ["rw", "noexec"]);
  assert.equal(tmpfsOptions(tmpfsAt("/run"), "/dev/shm"), undefined);
  assert.equal(tmpfsOptions("/dev/vda /dev/shm ext4 rw 0 0\n", "/dev/shm"), undefined);
  assert.equal(tmpfsOptions(`${tmpfsAt("/dev/shm")}/dev/vdb /dev/shm ext4 rw 0 0\n`, "/dev/shm"), undefined);
  assert.deepEqual(tmpfsOptions(`/dev/vdb /dev/shm ext4 rw 0 0\n${tmpfsAt("/dev/shm", "rw")}`, "/dev/shm"), ["rw"]);
});

test("a tmpfs with room that runs programs: a folder of this account's in it, sticky and open to all like /tmp", () => {
  withShm((shm, probe) => {
    const chosen = chooseTestTmpdir({}, probe(tmpfsAt(shm)));
    assert.deepEqual(chosen, { dir: join(shm, `platform-npm-test-${uid}`), reason: `${shm} is a tmpfs`, ours: true });
    assert.equal(statSync(chosen.dir).mode & 0o7777, 0o1777);
    assert.match(describeTmpdir(chosen), /^temporary files in .*platform-npm-test-\d+ \(.* is a tmpfs\)$/);
    // Kept between runs (it holds caches): the second run takes the same folder.
    assert.deepEqual(chooseTestTmpdir({}, probe(tmpfsAt(shm))), chosen);
  });
});

test("no tmpfs, noexec, too little room or not Linux: the system's temporary folder, and nothing made", () => {
  withShm((shm, probe) => {
    for (const p of [
      probe(""),
      probe("/dev/vda / ext4 rw 0 0\n"),
      probe(tmpfsAt(shm, "rw,nosuid,nodev,noexec,relatime,size=65536k")),
      probe(tmpfsAt(shm), minFreeBytes - 1),
      probe(tmpfsAt(shm), minFreeBytes, "darwin"),
      { ...probe(tmpfsAt(shm)), mounts: undefined },
    ])
      assert.equal(chooseTestTmpdir({}, p), undefined);
    assert.throws(() => statSync(join(shm, `platform-npm-test-${uid}`)), { code: "ENOENT" });
    assert.equal(describeTmpdir(undefined), `temporary files in ${tmpdir()}`);
  });
});

test("a name planted before the run (a link to a folder, a file, another account's folder) is not used", () => {
  withShm((shm, probe) => {
    const name = join(shm, `platform-npm-test-${uid}`);
    const elsewhere = join(shm, "elsewhere");
    mkdirSync(elsewhere);
    symlinkSync(elsewhere, name);
    assert.equal(chooseTestTmpdir({}, probe(tmpfsAt(shm))), undefined);
    rmSync(name);
    writeFileSync(name, "");
    assert.equal(chooseTestTmpdir({}, probe(tmpfsAt(shm))), undefined);
    rmSync(name);
    mkdirSync(name);
    chownSync(name, uid === 0 ? 65534 : uid, uid === 0 ? 65534 : -1);
    // As root the folder now belongs to nobody; as anyone else it stays ours (chown to another account needs root).
    assert.equal(chooseTestTmpdir({}, probe(tmpfsAt(shm)))?.dir, uid === 0 ? undefined : name);
  });
});

test("a probe that fails (free space unreadable) means the disk, not a failed run", () => {
  withShm((shm, probe) => {
    const failing: TmpdirProbe = {
      ...probe(tmpfsAt(shm)),
      freeBytes: () => {
        throw new Error("statfs: EACCES");
      },
    };
    assert.equal(chooseTestTmpdir({}, failing), undefined);
  });
});

test("TEST_TMPDIR wins over everything, and is made if missing", () => {
  withShm((shm, probe) => {
    const asked = join(shm, "asked", "deeper");
    assert.deepEqual(chooseTestTmpdir({ TEST_TMPDIR: asked }, probe("", 0, "darwin")), { dir: asked, reason: "TEST_TMPDIR", ours: false });
    assert.ok(statSync(asked).isDirectory());
  });
});

test("npm test refuses a TEST_TMPDIR it cannot make, with the reason, before running anything", () => {
  const r = spawnSync(process.execPath, ["--import", "tsx", "scripts/test.ts", "test/test-tmpdir.test.ts"], {
    env: { ...process.env, TEST_TMPDIR: "/dev/null/tests" },
    encoding: "utf8",
  });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /^npm test: TEST_TMPDIR=\/dev\/null\/tests cannot be used: .*ENOTDIR/m);
  assert.doesNotMatch(r.stdout, /== /, "no check or test ran");
});

test("a run's own folders and files untouched for a day are removed (left by killed runs); newer ones, and shared folders of any age, stay", () => {
  const dir = mkdtempSync(join(tmpdir(), "test-tmpdir-leftovers-"));
  try {
    const now = Date.now();
    const old = new Date(now - leftoverAgeMs - 60_000);
    const recent = new Date(now - leftoverAgeMs + 60_000);
    const make = (name: string, kind: "dir" | "file", time?: Date) => {
      const path = join(dir, name);
      if (kind === "dir") {
        mkdirSync(join(path, "postgres"), { recursive: true });
        writeFileSync(join(path, "postgres", "PG_VERSION"), "17\n");
      } else writeFileSync(path, "{}");
      if (time) utimesSync(path, time, time);
    };
    make("platform-test-Ab12Cd", "dir", old); // a killed run's platform
    make("platform-bundle-0123456789abcdef.json", "file", old); // a copy's build stamp
    make("platform-test-Zz99Yy", "dir"); // a run going on now
    make("storm-naive-x9YzQ1", "dir", recent);
    make("platform-test-postgres-templates", "dir", old); // shared: another run may be copying it
    make("tsx-0", "dir", old);
    assert.deepEqual(removeLeftovers(dir, now).sort(), ["platform-bundle-0123456789abcdef.json", "platform-test-Ab12Cd"]);
    assert.deepEqual(readdirSync(dir).sort(), ["platform-test-Zz99Yy", "platform-test-postgres-templates", "storm-naive-x9YzQ1", "tsx-0"]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
