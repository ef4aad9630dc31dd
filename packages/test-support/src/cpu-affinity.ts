import { spawnSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { availableParallelism } from "node:os";

/**
 * CPU affinity for a run's processes (Linux, util-linux's `taskset`): two
 * runs that measure the machine can each have their own half of the cores,
 * so that they run at the same time without sharing what they measure (the
 * storm lab's `splitCores`, lab/storm.ts; npm test's files marked to run
 * on their own core, scripts/run-test-files.ts). Node has no call for it; taskset is util-linux's, which
 * every Debian has (it is essential there).
 */

/**
 * Two disjoint halves of this machine's `cores` (taskset's list syntax:
 * "0" and "1", "0-3" and "4-7"; an odd core out is left to everything
 * else), or undefined where they cannot be had.
 */
export function coreHalves(cores = availableParallelism()): [string, string] | undefined {
  if (process.platform !== "linux" || cores < 2 || !hasTaskset()) return undefined;
  const half = Math.floor(cores / 2);
  const list = (from: number, to: number) => (from === to ? String(from) : `${from}-${to}`);
  return [list(0, half - 1), list(half, 2 * half - 1)];
}

function hasTaskset(): boolean {
  return spawnSync("taskset", ["--version"], { stdio: "ignore" }).status === 0;
}

/** The living children of every process, from /proc (each process's parent is field 4 of its stat). */
function childrenByParent(): Map<number, number[]> {
  const byParent = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // gone since the listing
    }
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after its last ")".
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    const list = byParent.get(ppid) ?? [];
    list.push(Number(entry));
    byParent.set(ppid, list);
  }
  return byParent;
}

/**
 * Restricts every thread of `roots` and of all their descendants to `cpus`.
 * Parents first, then a fresh look for children: a process forked after its
 * parent was pinned inherits the pin (a PostgreSQL backend for a new
 * connection), and one forked before it is found by the next look. A
 * process that exits meanwhile is skipped; any other refusal throws.
 */
export function pinProcessTrees(roots: readonly number[], cpus: string): void {
  const pinned = new Set<number>();
  let next = [...roots];
  while (next.length > 0) {
    for (const pid of next) {
      const r = spawnSync("taskset", ["--all-tasks", "--pid", "--cpu-list", cpus, String(pid)], { encoding: "utf8" });
      pinned.add(pid);
      if (r.status !== 0 && isAlive(pid)) throw new Error(`taskset could not pin pid ${pid} to cpus ${cpus}: ${r.stderr || r.error?.message}`);
    }
    const children = childrenByParent();
    next = [...pinned].flatMap((pid) => children.get(pid) ?? []).filter((pid) => !pinned.has(pid));
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
