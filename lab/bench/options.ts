import { chainSliceMs } from "./cells.js";
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
 * user). The full pass was added when the shipped bulkhead queues were too
 * short and a cold platform refused; with today's (docs/isolation.md) no
 * quick run without it refused a request (docs/performance.md).
 */
export const quick = { seconds: 0.25, rounds: 1, warmupSeconds: 0.25, warmupCells: "one-client", concurrency: 32 } as const;

function positive(v: string | undefined, name: string, dflt: number, integer: boolean): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) throw new Error(`--${name} must be a positive ${integer ? "integer" : "number"}`);
  return n;
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
  },
  log: (line: string) => void,
): BenchOptions {
  const base = values.quick ? quick : defaults;
  const seconds = positive(values.seconds, "seconds", base.seconds, false);
  return {
    seconds,
    rounds: positive(values.rounds, "rounds", base.rounds, true),
    // Each leg's own warm-up (one call per user) always runs; this is the extra pass over every cell.
    warmupSeconds: values["warmup-seconds"] === "0" ? 0 : positive(values["warmup-seconds"], "warmup-seconds", base.warmupSeconds, false),
    warmupCells: "warmupCells" in base ? base.warmupCells : "all",
    concurrency: positive(values.concurrency, "concurrency", base.concurrency, true),
    hops: !values.quick,
    // A shared leg (twice `seconds`) must hold a few slices each; the quick bench's
    // quarter-second legs hold none worth the name (cells.ts chainSliceMs).
    slicedHighConcurrency: seconds * 2000 >= 4 * chainSliceMs,
    ceiling: !values.quick,
    platformLogLevel: values["platform-log-level"] ?? "shipped",
    from: fromOption(values.from),
    log,
  };
}
