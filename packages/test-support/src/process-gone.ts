import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

/**
 * True while `pid` runs. A process that has exited but is not reaped yet (a
 * zombie: its parent died and nothing reaps orphans, as in a container
 * whose first process is not an init) counts as gone; so does one that no
 * longer exists. One we may not signal still runs.
 */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ESRCH") return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat[stat.lastIndexOf(")") + 2] !== "Z";
  } catch {
    // No /proc (not Linux): what kill(0) said. On Linux the process went between the two reads.
    return process.platform !== "linux";
  }
}

/** Polls until `pid` no longer runs (isRunning); false if it still does after `timeoutMs`. A bound against a hang, not a speed claim. */
export async function waitUntilGone(pid: number, timeoutMs: number): Promise<boolean> {
  const until = performance.now() + timeoutMs;
  while (performance.now() < until) {
    if (!isRunning(pid)) return true;
    await sleep(50);
  }
  return !isRunning(pid);
}
