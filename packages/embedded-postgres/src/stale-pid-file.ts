import { readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";

/**
 * Removes a `postmaster.pid` left behind by a crash, or fails when a live
 * postgres still owns the data directory.
 *
 * Postgres itself only treats the file as stale when its pid no longer
 * exists. After a container restart that pid is often reused by an unrelated
 * process, and postgres then refuses to start ("Is another postmaster
 * running?"). We look at what the pid actually is instead.
 */
export function clearStalePidFile(dataDir: string): void {
  const file = join(dataDir, "postmaster.pid");
  let content: string;
  try {
    content = readFileSync(file, "utf8");
  } catch {
    return; // no pid file: a clean start
  }
  const pid = Number.parseInt(content.split("\n")[0] ?? "", 10);
  if (Number.isInteger(pid) && pid > 0 && isPostgresFor(pid, dataDir)) {
    throw new Error(`embedded-postgres: a postgres (pid ${pid}) is already running on ${dataDir}; stop it first (or use another data directory)`);
  }
  rmSync(file, { force: true });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** A live postgres started with `-D dataDir`. Where /proc is missing, any live pid counts (the safe answer). */
function isPostgresFor(pid: number, dataDir: string): boolean {
  if (!isAlive(pid)) return false;
  let argv: string[];
  try {
    argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
  } catch {
    return process.platform !== "linux";
  }
  // A zombie has an empty command line; it is not serving anything.
  if (!argv.some((a) => a.endsWith("postgres"))) return false;
  const i = argv.indexOf("-D");
  const dir = i >= 0 ? argv[i + 1] : undefined;
  return dir === undefined || resolve(dir) === resolve(dataDir);
}
