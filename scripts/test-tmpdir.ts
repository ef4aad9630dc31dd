/**
 * Where a run's temporary files go. `npm test` makes and deletes thousands
 * of files: every test platform copies a PostgreSQL cluster of about a
 * thousand files and removes it when it stops (some forty a run), the
 * generator test copies the repository, and PostgreSQL syncs its WAL on
 * every commit. On this machine's disk (ext4 mounted with `discard`) the
 * run spent 110-113 CPU seconds in the kernel, in memory (tmpfs) 79-80, and
 * the run was 22 s shorter (docs/testing.md, "Temporary files in
 * memory"). Nothing a test asserts depends on the disk: the
 * restart tests kill PostgreSQL, not the machine, and what a killed
 * process wrote is in the kernel either way.
 *
 * The choice, in order:
 * - `TEST_TMPDIR`, if set: that folder (made if missing);
 * - on Linux, a folder of this account's under `/dev/shm`, if that is a
 *   tmpfs that allows programs to run (the embedded PostgreSQL's binaries
 *   may be copied to the temporary folder for the account it runs as) with
 *   at least `minFreeBytes` free (a container's default /dev/shm is 64 MB);
 * - otherwise the system's temporary folder, unchanged.
 *
 * The folder is kept between runs: it also holds caches (tsx's, the
 * build's, the cluster template), which a fresh folder would rebuild. What
 * a killed run left there would hold memory until the machine restarts, so
 * each run first removes the leftovers nobody has touched for a day
 * (`removeLeftovers`).
 */
import { chmodSync, lstatSync, mkdirSync, readFileSync, readdirSync, rmSync, statfsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

/** A whole run peaked at about 1 GB (docs/testing.md); leave room for several times that. */
export const minFreeBytes = 4 * 1024 ** 3;

export interface TestTmpdir {
  readonly dir: string;
  /** Why this folder, for the run's header. */
  readonly reason: string;
  /** Made by chooseTestTmpdir for the runs alone (not TEST_TMPDIR, which is the caller's). */
  readonly ours: boolean;
}

export interface TmpdirProbe {
  readonly platform: NodeJS.Platform;
  readonly uid: number;
  /** Where a tmpfs is looked for: /dev/shm. */
  readonly shm: string;
  /** The text of /proc/mounts, or undefined where there is none. */
  readonly mounts: string | undefined;
  readonly freeBytes: (dir: string) => number;
}

const systemProbe = (): TmpdirProbe => ({
  platform: process.platform,
  uid: process.getuid?.() ?? 0,
  shm: "/dev/shm",
  mounts: readOrUndefined("/proc/mounts"),
  freeBytes: (dir) => {
    const s = statfsSync(dir);
    return s.bavail * s.bsize;
  },
});

function readOrUndefined(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

/**
 * The mount options of the tmpfs mounted at `mountPoint`, or undefined if
 * none is (the last mount of a point is the one in effect).
 */
export function tmpfsOptions(mounts: string, mountPoint: string): string[] | undefined {
  let found: string[] | undefined;
  for (const line of mounts.split("\n")) {
    const [, point, type, options] = line.split(" ");
    if (point === mountPoint) found = type === "tmpfs" ? (options ?? "").split(",") : undefined;
  }
  return found;
}

/**
 * The folder to use, or undefined for the system's temporary folder; makes
 * it if needed. Throws only when TEST_TMPDIR cannot be made.
 */
export function chooseTestTmpdir(env: NodeJS.ProcessEnv = process.env, probe: TmpdirProbe = systemProbe()): TestTmpdir | undefined {
  const asked = env["TEST_TMPDIR"];
  if (asked) {
    const dir = resolve(asked);
    mkdirSync(dir, { recursive: true });
    return { dir, reason: "TEST_TMPDIR", ours: false };
  }
  try {
    return inMemory(probe);
  } catch {
    // Whatever the probe could not read or make: the disk, as without it.
    return undefined;
  }
}

function inMemory(probe: TmpdirProbe): TestTmpdir | undefined {
  if (probe.platform !== "linux" || probe.mounts === undefined) return undefined;
  const options = tmpfsOptions(probe.mounts, probe.shm);
  if (options === undefined || options.includes("noexec")) return undefined;
  if (probe.freeBytes(probe.shm) < minFreeBytes) return undefined;
  const dir = join(probe.shm, `platform-npm-test-${probe.uid}`);
  if (!ownFolder(dir, probe.uid)) return undefined;
  return { dir, reason: `${probe.shm} is a tmpfs`, ours: true };
}

/**
 * Makes `dir` (sticky and open to all, as /tmp is: PostgreSQL runs as
 * another account when this one is root) and checks that it is a real
 * folder of ours: /dev/shm is writable by everyone, and a name another
 * account made first, or a link it planted, must not be used.
 */
function ownFolder(dir: string, uid: number): boolean {
  try {
    mkdirSync(dir, { mode: 0o1777 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") return false;
  }
  const s = lstatSync(dir);
  if (!s.isDirectory() || s.uid !== uid) return false;
  // mkdir's mode passes through the umask.
  if ((s.mode & 0o7777) !== 0o1777) chmodSync(dir, 0o1777);
  return true;
}

/** No run lasts this long: an entry untouched for longer was left by a run that was killed. */
export const leftoverAgeMs = 24 * 60 * 60 * 1000;

/**
 * A folder a run made for itself: `mkdtemp` ends the prefix with six
 * random characters (platform-test-Ab12Cd, storm-naive-x9YzQ1). A folder
 * of a fixed name is shared by runs (the cluster template, the binaries
 * PostgreSQL runs from, tsx's cache, the port reservations): another run
 * may be using it, however old it is, so it is never removed here.
 */
const runFolder = /-[A-Za-z0-9]{6}$/;

/**
 * Removes what runs left in `dir` and nobody touched for `leftoverAgeMs`:
 * files (build stamps, logs: a stamp removed means one rebuild) and the
 * folders runs make for themselves; returns their names. Only for a
 * folder that is `ours`.
 */
export function removeLeftovers(dir: string, now = Date.now()): string[] {
  const removed: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    try {
      const entry = lstatSync(path);
      if (now - entry.mtimeMs < leftoverAgeMs) continue;
      if (entry.isDirectory() && !runFolder.test(name)) continue;
      rmSync(path, { recursive: true, force: true });
      removed.push(name);
    } catch {
      // Gone already, or another run's: not this run's business.
    }
  }
  return removed;
}

/** What the run prints about it. */
export function describeTmpdir(chosen: TestTmpdir | undefined): string {
  return chosen === undefined ? `temporary files in ${tmpdir()}` : `temporary files in ${chosen.dir} (${chosen.reason})`;
}
