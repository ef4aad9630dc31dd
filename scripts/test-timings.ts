/**
 * Per test file: wall time and CPU time (user + system) of the file's
 * whole process tree (the file's node process, the platforms it starts,
 * their PostgreSQL, tsc, docker-compose, ...), for `TEST_TIMINGS=<file>
 * npm test`. On a machine shared with other work, wall times say little;
 * CPU seconds are what a file costs whatever else runs.
 *
 * Linux only (/proc). node's runner spawns one process per test file with
 * the file's absolute path on its command line; every process below it is
 * the file's. Sampled every `intervalMs`: a process's own time plus what
 * its reaped children used (cutime, cstime), summed over the live
 * processes of a tree, counts each process once whether it still runs or
 * ended and was waited for. What a tree used in its last interval before
 * it ended is lost (at most intervalMs × cores per file), and so is a
 * process orphaned to init before its parent waited for it. The sampling
 * itself costs: reading every process's stat (325 processes on the shared
 * machine) every 250 ms took 3 % of a core, so the default is 500 ms, and
 * the runner's own line, "(runner)", includes it.
 */
import { readFileSync, readdirSync } from "node:fs";

export interface FileTiming {
  file: string;
  /** When the file's first process was seen, seconds after the sampling started: the run's schedule. */
  startSeconds: number;
  wallSeconds: number;
  cpuSeconds: number;
}

interface ProcStat {
  pid: number;
  ppid: number;
  /** utime + stime, in clock ticks */
  own: number;
  /** cutime + cstime: the children it waited for, in clock ticks */
  reaped: number;
}

/** Linux's USER_HZ: 100 on every architecture node runs on. */
const ticksPerSecond = 100;

function readStat(pid: string): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined; // ended between listing and reading
  }
  // The command name is in parentheses and may hold spaces and parentheses: fields follow the last ')'.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const num = (i: number) => Number(fields[i]);
  // fields[0] is the state (field 3 of proc(5)); ppid is field 4, utime..cstime fields 14..17.
  return { pid: Number(pid), ppid: num(1), own: num(11) + num(12), reaped: num(13) + num(14) };
}

function readCmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
  } catch {
    return "";
  }
}

/**
 * Samples the process tree below `rootPid` (the runner) and attributes it to
 * the `files` (absolute paths). Children of the runner that run no test file
 * (the shared platform's processes) count as "(shared platform)"; the
 * runner's own CPU as "(runner)".
 */
export function startTimings(files: string[], rootPid = process.pid, intervalMs = 500): { stop(): FileTiming[] } {
  return sampleTree((_pid, cmd) => files.find((f) => cmd.includes(f)) ?? "(shared platform)", "(runner)", rootPid, intervalMs);
}

/**
 * The same for any process: each direct child of `rootPid` (and everything
 * below it) is attributed to `nameOf(pid, commandLine)`, undefined: not
 * counted; `rootPid`'s own time to `rootName`.
 */
export function sampleTree(
  nameOf: (pid: number, commandLine: string) => string | undefined,
  rootName: string,
  rootPid = process.pid,
  intervalMs = 500,
): { stop(): FileTiming[] } {
  const fileOfChild = new Map<number, string | undefined>();
  const totals = new Map<string, { first: number; last: number; ticks: number }>();
  const startedAt = Date.now();

  function sample(): void {
    const now = Date.now();
    const stats = new Map<number, ProcStat>();
    for (const name of readdirSync("/proc")) {
      if (!/^\d+$/.test(name)) continue;
      const s = readStat(name);
      if (s) stats.set(s.pid, s);
    }
    const sums = new Map<string, number>();
    const ownerOf = (pid: number): string | undefined => {
      // Walk up to the runner's direct child; that child names the file.
      let p = stats.get(pid);
      while (p && p.ppid !== rootPid) p = stats.get(p.ppid);
      if (!p) return undefined;
      if (!fileOfChild.has(p.pid)) fileOfChild.set(p.pid, nameOf(p.pid, readCmdline(p.pid)));
      return fileOfChild.get(p.pid);
    };
    for (const s of stats.values()) {
      // The runner reaps the files' processes: its own time only, or it would count every file again.
      const [owner, ticks] = s.pid === rootPid ? [rootName, s.own] : [ownerOf(s.pid), s.own + s.reaped];
      if (owner !== undefined) sums.set(owner, (sums.get(owner) ?? 0) + ticks);
    }
    for (const [file, ticks] of sums) {
      const t = totals.get(file);
      // Monotone: a tree's sum only drops when its last process ended (then it is gone from sums anyway).
      if (t) {
        t.last = now;
        t.ticks = Math.max(t.ticks, ticks);
      } else totals.set(file, { first: now, last: now, ticks });
    }
  }

  sample();
  const timer = setInterval(sample, intervalMs);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      sample();
      return [...totals.entries()]
        .map(([file, t]) => ({
          file,
          startSeconds: (t.first - startedAt) / 1000,
          wallSeconds: (t.last - t.first) / 1000,
          cpuSeconds: t.ticks / ticksPerSecond,
        }))
        .sort((a, b) => b.cpuSeconds - a.cpuSeconds);
    },
  };
}

/** A table of the timings, in the order given. */
export function formatTimings(timings: FileTiming[], root: string): string {
  const rel = (f: string) => (f.startsWith(root) ? f.slice(root.length + 1) : f);
  const lines = timings.map((t) => `${t.cpuSeconds.toFixed(1).padStart(7)} ${t.wallSeconds.toFixed(1).padStart(7)}  ${rel(t.file)}`);
  return `  cpu s  wall s  file\n${lines.join("\n")}\n`;
}
