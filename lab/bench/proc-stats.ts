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
 */
export class ProcessTreeCpu {
  private readonly lastSeen = new Map<number, number>();
  constructor(private readonly rootPid: number) {}

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
