import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { pinProcessTrees } from "@platform/test-support";
import type { FromLoad, LoadConfig, LoadResult, RatePhase, RequestMix, ToLoad } from "./protocol.js";

const entry = fileURLToPath(new URL("./load-process.ts", import.meta.url));

/** 40% writes, 40% catalogue reads, 20% order reads. */
export const defaultMix: RequestMix = { placeOrder: 40, listProducts: 40, getOrder: 20 };

export type LoadOptions = Omit<LoadConfig, "startAt" | "maxRequests" | "maxInFlight" | "connections" | "bucketMs" | "mix"> &
  Partial<Pick<LoadConfig, "maxRequests" | "maxInFlight" | "connections" | "bucketMs" | "mix">> & {
    /** Called with the start time (epoch ms) once the load process is ready; the first arrival is then `startDelayMs` later. */
    onStart?: (startAt: number) => void;
    startDelayMs?: number;
    /** Once the process is ready, wait for this too before starting (its code is loaded and its connections open by then); if it rejects, so does the load, unstarted. */
    startAfter?: Promise<unknown>;
    /** Pin the load process to these cores (taskset's list), with the platform it loads (lab-platform.ts, `cpus`). */
    cpus?: string;
    /**
     * An open loop's phases, known only later (sized from a measurement that
     * runs while this process loads its code): they replace `mode.phases`,
     * and the load starts once they and `startAfter` are there.
     */
    phasesFrom?: Promise<RatePhase[]>;
  };

function plannedMs(mode: LoadConfig["mode"]): number {
  return mode.kind === "open" ? mode.phases.reduce((s, p) => s + p.durationMs, 0) : mode.durationMs;
}

/** Longest wait for the load process to load its code and open its connections. */
const readyTimeoutMs = 60_000;

/**
 * Runs one load in a forked process and resolves with its report. The
 * schedule starts only once the process is ready (see ToLoad); the child is
 * killed if it has not answered well after its schedule (it bounds itself
 * too), and dies with us (IPC disconnect).
 */
export function runLoad(opts: LoadOptions): Promise<LoadResult> {
  const { onStart, startDelayMs = 100, startAfter, cpus, phasesFrom, ...rest } = opts;
  const cfg: Omit<LoadConfig, "startAt"> = {
    maxRequests: 200_000,
    maxInFlight: 5_000,
    connections: 4,
    bucketMs: 1000,
    mix: defaultMix,
    ...rest,
  };
  const child = fork(entry, [], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  if (cpus !== undefined && child.pid !== undefined) {
    try {
      pinProcessTrees([child.pid], cpus);
    } catch (e) {
      child.kill("SIGKILL");
      return Promise.reject(e);
    }
  }
  return new Promise<LoadResult>((resolve, reject) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const arm = (ms: number, what: string) => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        child.kill("SIGKILL");
        finish(() => reject(new Error(`load process: ${what} within ${ms} ms`)));
      }, ms);
    };
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      fn();
    };
    arm(readyTimeoutMs, "not ready");
    child.on("message", (m: FromLoad) => {
      if (m.type === "ready") {
        // The wait for `startAfter` (and `phasesFrom`) is the caller's to bound; the child waits with it.
        if (startAfter || phasesFrom) clearTimeout(timer);
        void Promise.all([startAfter, phasesFrom]).then(
          ([, phases]) => {
            if (settled) return;
            const startAt = Date.now() + startDelayMs;
            const mode = phases && cfg.mode.kind === "open" ? { ...cfg.mode, phases } : cfg.mode;
            // No try starts after the schedule, and the ones in flight then end within their timeout.
            arm(startDelayMs + plannedMs(mode) + cfg.clientTimeoutMs + 30_000, "no result");
            child.send({ type: "start", startAt, ...(phases ? { phases } : {}) } satisfies ToLoad);
            onStart?.(startAt);
          },
          (e: unknown) => {
            // What it waited for failed (a warm-up before a measurement): no load without it.
            child.kill("SIGKILL");
            finish(() => reject(e));
          },
        );
      } else if (m.type === "result") finish(() => resolve(m.result));
      else finish(() => reject(new Error(`load process failed: ${m.message}`)));
    });
    child.on("error", (e) => finish(() => reject(e)));
    // "close", not "exit": a process's exit can be seen before its last IPC message (the result, large
    // where every try is recorded) has been read; "close" comes after the channel is drained and
    // closed. On a loaded machine "exit" won that race: "exited (0) without a result".
    child.on("close", (code, signal) => finish(() => reject(new Error(`load process exited (${signal ?? code}) without a result`))));
    child.send({ type: "prepare", config: cfg } satisfies ToLoad);
  });
}
