import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { FromWorker, LegResult, LegSpec, ToWorker } from "./leg.js";

const entry = fileURLToPath(new URL("./load-worker.ts", import.meta.url));

/** Longest wait for a leg's connections to open and warm (seconds under CPU contention). */
const prepareTimeoutMs = 30_000;

/**
 * The runner's handle on the load worker process (load-worker.ts): one leg
 * at a time, in two steps, so that the caller can sample the services'
 * CPU counters between warm-up and measurement. Each step has a timeout
 * after which the worker is killed; it also dies with us (IPC disconnect).
 */
export class LoadWorker {
  private pending: { resolve: (m: FromWorker) => void; reject: (e: Error) => void; timer: NodeJS.Timeout } | undefined;
  private exited = false;

  private constructor(private readonly child: ChildProcess) {
    child.on("message", (m: FromWorker) => this.settle((p) => (m.type === "error" ? p.reject(new Error(`load worker: ${m.message}`)) : p.resolve(m))));
    child.on("exit", (code, signal) => {
      this.exited = true;
      this.settle((p) => p.reject(new Error(`load worker exited (${signal ?? code})`)));
    });
  }

  static start(): LoadWorker {
    return new LoadWorker(fork(entry, [], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] }));
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  private settle(fn: (p: NonNullable<LoadWorker["pending"]>) => void): void {
    const p = this.pending;
    if (!p) return;
    this.pending = undefined;
    clearTimeout(p.timer);
    fn(p);
  }

  private ask(msg: ToWorker, timeoutMs: number): Promise<FromWorker> {
    if (this.exited) return Promise.reject(new Error("load worker is gone"));
    if (this.pending) return Promise.reject(new Error("load worker is busy"));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.child.kill("SIGKILL");
        this.settle((p) => p.reject(new Error(`load worker: no answer to ${msg.type} within ${timeoutMs} ms`)));
      }, timeoutMs);
      this.pending = { resolve, reject, timer };
      this.child.send(msg);
    });
  }

  /** Opens and warms the leg's connections; resolves when the worker is ready to start the clock. */
  async prepare(leg: LegSpec): Promise<void> {
    const m = await this.ask({ type: "prepare", leg }, prepareTimeoutMs + leg.timeoutMs);
    if (m.type !== "prepared") throw new Error(`load worker: expected prepared, got ${m.type}`);
  }

  /** Runs the prepared leg. */
  async go(leg: LegSpec): Promise<LegResult> {
    // A leg ends at its duration plus the slowest call still running.
    const m = await this.ask({ type: "go" }, Math.max(leg.durationMs, leg.maxDurationMs) + leg.timeoutMs + 10_000);
    if (m.type !== "result") throw new Error(`load worker: expected a result, got ${m.type}`);
    return m.result;
  }

  stop(): void {
    if (!this.exited) this.child.kill("SIGTERM");
  }
}
