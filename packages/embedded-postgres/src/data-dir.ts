import { spawn } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { LogTail } from "./log-tail.js";
import { type RunAsUser, assertTraversable } from "./run-as-user.js";

/**
 * Creates `dataDir` if needed with the mode postgres insists on (0700) and,
 * when we are root, hands it to the account postgres runs as.
 */
export function prepareDataDir(dataDir: string, user: RunAsUser | undefined): void {
  // Parents get the default mode (a recursive mkdir would apply 0700 to every
  // level it creates, locking the postgres user out of its own data dir).
  mkdirSync(dirname(dataDir), { recursive: true });
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  if (user) {
    assertTraversable(dataDir, user, "data directory");
    chownSync(dataDir, user.uid, user.gid);
  }
  chmodSync(dataDir, 0o700);
}

/** True when `dataDir` already holds a cluster (so a second start reuses its data). */
export function isInitialised(dataDir: string): boolean {
  return existsSync(join(dataDir, "PG_VERSION"));
}

export interface InitdbOptions {
  initdb: string;
  dataDir: string;
  superuser: string;
  user: RunAsUser | undefined;
  onLog?: (line: string) => void;
}

/**
 * Runs initdb. `--auth=trust` lets any local connection in without a
 * password: acceptable only because this is a development database that
 * listens on loopback; never point it at a shared interface.
 * `--no-sync` skips the final fsync: a dev cluster that an OS crash corrupts
 * is simply re-created, and the sync is most of initdb's time.
 */
export function runInitdb(opts: InitdbOptions): Promise<void> {
  const args = ["-D", opts.dataDir, "-U", opts.superuser, "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions"];
  const log = new LogTail(opts.onLog);
  return new Promise((resolve, reject) => {
    const child = spawn(opts.initdb, args, {
      cwd: "/",
      stdio: ["ignore", "pipe", "pipe"],
      ...(opts.user ? { uid: opts.user.uid, gid: opts.user.gid } : {}),
    });
    child.stdout.on("data", (c: Buffer) => log.push(c));
    child.stderr.on("data", (c: Buffer) => log.push(c));
    child.on("error", (err) => reject(new Error(`embedded-postgres: cannot run initdb: ${err.message}`, { cause: err })));
    child.on("close", (code, signal) => {
      log.end();
      if (code === 0) resolve();
      else reject(new Error(`embedded-postgres: initdb failed (${signal ?? `exit ${code}`}):\n${log.text()}`));
    });
  });
}
