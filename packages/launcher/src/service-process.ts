import { fork, type ChildProcess } from "node:child_process";
import { closeSync, existsSync, openSync } from "node:fs";
import { dirname, join } from "node:path";
import { once } from "node:events";

/** The service exited on its own with this status: bad configuration, don't restart. */
export const exitConfigError = 78;

export interface ServiceSpec {
  name: string;
  /**
   * The service's entry: compiled JavaScript (`dist/main.js`) runs on plain
   * node; a TypeScript file (`src/main.ts`) runs through tsx.
   */
  entry: string;
  env: Record<string, string>;
  /** File that receives the service's stdout and stderr (JSON log lines). */
  logFile: string;
}

export interface ServiceEvents {
  onReady?: (name: string) => void;
  onExit?: (name: string, code: number | null, signal: NodeJS.Signals | null, restartInMs: number | undefined) => void;
}

/**
 * One supervised service process. It is started with an IPC channel, so it
 * stops by itself if we die (see runMain in @platform/runtime); if it dies
 * unexpectedly it is restarted with exponential backoff, as compose's
 * `restart: unless-stopped` would; a configuration error is not retried.
 */
export class ServiceProcess {
  private child: ChildProcess | undefined;
  /**
   * The log file, opened for appending, as the child's stdout and stderr:
   * the service writes its lines straight into it. Through a pipe, this
   * process would read and write again every line the services log, on
   * the same cores (about 1.5 % of the services' own CPU under the bench's load).
   */
  private logFd: number | undefined;
  private stopping = false;
  private restartTimer: NodeJS.Timeout | undefined;
  private consecutiveFailures = 0;
  private readyWaiters: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];
  /** Set when the process reported ready; cleared when it exits. */
  ready = false;
  restarts = 0;

  constructor(
    readonly spec: ServiceSpec,
    private readonly events: ServiceEvents = {},
    private readonly backoff = { initialMs: 500, maxMs: 10_000 },
  ) {
    this.logFd = openSync(spec.logFile, "a");
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(): void {
    const child = fork(this.spec.entry, [], {
      env: { ...process.env, ...this.spec.env, ...sourceEnv(this.spec.entry) },
      execArgv: this.spec.entry.endsWith(".ts") ? ["--import", "tsx"] : [],
      stdio: ["ignore", this.logFd ?? "ignore", this.logFd ?? "ignore", "ipc"],
      // Its own process group: a terminal's Ctrl-C reaches only the
      // supervisor, which then stops services before the database.
      detached: true,
    });
    this.child = child;
    child.on("message", (m: unknown) => {
      if ((m as { type?: unknown }).type !== "ready") return;
      this.ready = true;
      this.consecutiveFailures = 0;
      this.events.onReady?.(this.spec.name);
      for (const w of this.readyWaiters.splice(0)) w.resolve();
    });
    child.on("exit", (code, signal) => {
      this.ready = false;
      this.child = undefined;
      if (this.stopping) return;
      if (code === exitConfigError) {
        const err = new Error(`${this.spec.name} refused its configuration (see ${this.spec.logFile})`);
        for (const w of this.readyWaiters.splice(0)) w.reject(err);
        this.events.onExit?.(this.spec.name, code, signal, undefined);
        return;
      }
      const delay = Math.min(this.backoff.maxMs, this.backoff.initialMs * 2 ** this.consecutiveFailures);
      this.consecutiveFailures++;
      this.events.onExit?.(this.spec.name, code, signal, delay);
      this.restartTimer = setTimeout(() => {
        this.restarts++;
        this.start();
      }, delay);
    });
  }

  /** Resolves once the service reports that it serves. */
  whenReady(timeoutMs: number): Promise<void> {
    if (this.ready) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.spec.name} not ready after ${timeoutMs} ms (see ${this.spec.logFile})`)), timeoutMs);
      this.readyWaiters.push({
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
    });
  }

  /** Sends a signal to the running process (tests use this to kill services mid-traffic). */
  kill(signal: NodeJS.Signals): void {
    this.child?.kill(signal);
  }

  /** SIGTERM, then SIGKILL after `graceMs`; no restart afterwards. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = once(child, "exit");
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(timer);
    }
    if (this.logFd !== undefined) closeSync(this.logFd);
    this.logFd = undefined;
  }
}

/**
 * A TypeScript entry imports the workspaces as sources through the paths in
 * the repository's tsconfig.json; tsx looks for that file in the working
 * directory, so name it, whatever the directory.
 */
function sourceEnv(entry: string): Record<string, string> {
  if (!entry.endsWith(".ts")) return {};
  for (let dir = dirname(entry); dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, "tsconfig.json"))) return { TSX_TSCONFIG_PATH: join(dir, "tsconfig.json") };
  }
  return {};
}
