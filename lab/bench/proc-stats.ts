/**
 * CPU time and resident memory of processes, from Linux's /proc. CPU is
 * user + system time in clock ticks (USER_HZ, 100 on Linux for every
 * architecture the bench runs on), converted to milliseconds.
 */
import { readFileSync, readdirSync } from "node:fs";

const msPerTick = 1000 / 100;

interface ProcStat {
  ppid: number;
  cpuMs: number;
}

function readStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined; // gone (a backend that ended, a service that exited)
  }
  // The command name may contain spaces and parentheses: fields start after the last ')'.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  // fields[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
  return { ppid: Number(fields[1]), cpuMs: (Number(fields[11]) + Number(fields[12])) * msPerTick };
}

/** User + system CPU time of one process so far, ms (0 when it is gone). */
export function cpuMs(pid: number | undefined): number {
  return pid === undefined ? 0 : (readStat(pid)?.cpuMs ?? 0);
}

/**
 * CPU time of a PostgreSQL server: the postmaster and every child (the
 * backends serving both chains, the checkpointer, the WAL writer...).
 * Backends come and go (pg pools close idle connections after 10 s), so
 * each child's last reading is remembered: a backend that ended keeps
 * counting what it had used, and the total never goes backwards. What a
 * backend used between its last sample and its end is lost (little: it was
 * idle before it closed).
 *
 * Backends can be put in groups (`assign`: the chain whose database a
 * backend serves, from pg_stat_activity), so that in a leg where both
 * chains ran each is charged its own backends' CPU rather than a share of
 * the whole server's; the rest (the postmaster, its background processes,
 * backends not assigned) is the server's own.
 */
export class ProcessTreeCpu {
  private readonly lastSeen = new Map<number, number>();
  /** A pid keeps the group it was first given: a backend serves one database for its whole life. */
  private readonly groups = new Map<number, string>();
  constructor(private readonly rootPid: number) {}

  /** Reads every child's counter; the total so far, ms. */
  totalMs(): number {
    this.lastSeen.set(this.rootPid, cpuMs(this.rootPid) || (this.lastSeen.get(this.rootPid) ?? 0));
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      const pid = Number(entry);
      const s = readStat(pid);
      if (s && s.ppid === this.rootPid) this.lastSeen.set(pid, Math.max(s.cpuMs, this.lastSeen.get(pid) ?? 0));
    }
    let total = 0;
    for (const v of this.lastSeen.values()) total += v;
    return total;
  }

  /**
   * Puts backends in groups. Call it just before `totalMs()`: a backend read
   * while still in no group and assigned later would move what it had used
   * from the server's own share to its group's between two samples.
   */
  assign(groups: ReadonlyMap<number, string>): void {
    for (const [pid, group] of groups) if (!this.groups.has(pid)) this.groups.set(pid, group);
  }

  /** As of the last `totalMs()`: the CPU of the children in `group`, or (undefined) of everything in none, ms. */
  groupMs(group: string | undefined): number {
    let total = 0;
    for (const [pid, v] of this.lastSeen) if (this.groups.get(pid) === group) total += v;
    return total;
  }
}

/** The parent of a process (e.g. the postmaster of a backend), or undefined. */
export function parentPid(pid: number): number | undefined {
  return readStat(pid)?.ppid;
}

export interface Memory {
  /** Resident now, KiB. */
  rssKiB: number;
  /** Highest resident size since start, KiB. */
  peakKiB: number;
}

export function memory(pid: number | undefined): Memory | undefined {
  if (pid === undefined) return undefined;
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, "utf8");
  } catch {
    return undefined;
  }
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? Number.NaN);
  return { rssKiB: kib("VmRSS"), peakKiB: kib("VmHWM") };
}

/**
 * CPU time the whole machine spent busy so far (all cores, every process,
 * the kernel), ms: with the bench's own processes subtracted, what others
 * took from the cores while we measured.
 */
export function machineBusyMs(): number {
  const line = readFileSync("/proc/stat", "utf8").split("\n", 1)[0] ?? "";
  // cpu  user nice system idle iowait irq softirq steal ...
  const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
  return ((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) * msPerTick;
}
