import { chainSliceMs, methods, type Method } from "./cells.js";
import type { BenchOptions } from "./run-bench.js";

/** Defaults: about 4 minutes on 2 cores, start-up included. */
export const defaults = { seconds: 2, rounds: 3, warmupSeconds: 0.5, concurrency: 32 } as const;

/**
 * --quick: what test/bench.test.ts runs, about 15 s on 2 cores, start-up
 * included. Its warm-up pass runs only the one-client protocol pairs: a
 * pair runs its h2c block first, and on cold processes that block alone
 * paid the JIT (3x HTTP/1.1 at p25 on a busy machine, on both chains).
 * The 32-client legs need no pass of their own: each method's pair (at
 * least 40 requests on each chain) runs before them and warms the same
 * code, and every leg opens and warms its own connections (one call per
 * user). With the shipped bulkhead queues (docs/isolation.md) a cold
 * platform refuses no request of a quick run without a full warm-up pass.
 */
export const quick = { seconds: 0.25, rounds: 1, warmupSeconds: 0.25, warmupCells: "one-client", concurrency: 32 } as const;

function positive(v: string | undefined, name: string, dflt: number, integer: boolean): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) throw new Error(`--${name} must be a positive ${integer ? "integer" : "number"}`);
  return n;
}

/**
 * A shared leg (twice `seconds`) must hold a few slices for each chain: by
 * default `chainSliceMs` where it does, leg after leg where it does not (the
 * quick bench's quarter-second legs); `--slice-ms 0` asks for leg after leg.
 */
function sliceOption(v: string | undefined, seconds: number): { sliceMs: number } {
  const fits = (ms: number) => seconds * 2000 >= 4 * ms;
  if (v === undefined) return { sliceMs: fits(chainSliceMs) ? chainSliceMs : 0 };
  if (v === "0") return { sliceMs: 0 };
  const ms = positive(v, "slice-ms", chainSliceMs, true);
  if (!fits(ms)) throw new Error(`--slice-ms ${ms} needs legs of at least ${(ms * 2) / 1000} s (--seconds): each chain must get two slices of a leg`);
  return { sliceMs: ms };
}

function methodOption(v: string | undefined): { method?: Method } {
  if (v === undefined) return {};
  const method = methods.find((m) => m === v);
  if (!method) throw new Error(`--method must be one of ${methods.join(", ")}, not ${JSON.stringify(v)}`);
  return { method };
}

/** Both chains from compiled JavaScript unless asked otherwise (compiled-chains.ts). */
function fromOption(v: string | undefined): "build" | "source" {
  if (v === undefined || v === "build" || v === "source") return v ?? "build";
  throw new Error(`--from must be "build" or "source", not ${JSON.stringify(v)}`);
}

export function benchOptions(
  values: {
    seconds?: string;
    rounds?: string;
    "warmup-seconds"?: string;
    concurrency?: string;
    quick?: boolean;
    "platform-log-level"?: string;
    from?: string;
    "slice-ms"?: string;
    method?: string;
    jwt?: boolean;
  },
  log: (line: string) => void,
): BenchOptions {
  const base = values.quick ? quick : defaults;
  const seconds = positive(values.seconds, "seconds", base.seconds, false);
  return {
    ...sliceOption(values["slice-ms"], seconds),
    ...methodOption(values.method),
    seconds,
    rounds: positive(values.rounds, "rounds", base.rounds, true),
    // Each leg's own warm-up (one call per user) always runs; this is the extra pass over every cell.
    warmupSeconds: values["warmup-seconds"] === "0" ? 0 : positive(values["warmup-seconds"], "warmup-seconds", base.warmupSeconds, false),
    warmupCells: "warmupCells" in base ? base.warmupCells : "all",
    concurrency: positive(values.concurrency, "concurrency", base.concurrency, true),
    hops: !values.quick,
    ceiling: !values.quick,
    platformLogLevel: values["platform-log-level"] ?? "shipped",
    jwt: values.jwt === true,
    from: fromOption(values.from),
    log,
  };
}
