import type { BenchOptions } from "./run-bench.js";

/** Defaults: about 4 minutes on 2 cores, start-up included. */
export const defaults = { seconds: 2, rounds: 3, warmupSeconds: 0.5, concurrency: 32 } as const;

/**
 * --quick: what test/bench.test.ts runs, about 15 s on 2 cores, start-up
 * included. No warm-up pass: each method's one-client legs (40 requests or
 * more on each chain, both protocols) run before its 32-client legs and warm
 * the same code, and every leg warms its own connections (one call per
 * user). The pass was added when the shipped bulkhead queues were too short
 * and a cold platform refused; with today's (docs/isolation.md) eleven
 * quick runs without it at load 12 to 23 saw no refusal (docs/performance.md).
 */
export const quick = { seconds: 0.25, rounds: 1, warmupSeconds: 0, concurrency: 32 } as const;

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
  return {
    seconds: positive(values.seconds, "seconds", base.seconds, false),
    rounds: positive(values.rounds, "rounds", base.rounds, true),
    // Each leg's own warm-up (one call per user) always runs; this is the extra pass over every cell.
    warmupSeconds: values["warmup-seconds"] === "0" ? 0 : positive(values["warmup-seconds"], "warmup-seconds", base.warmupSeconds, false),
    concurrency: positive(values.concurrency, "concurrency", base.concurrency, true),
    hops: !values.quick,
    ceiling: !values.quick,
    platformLogLevel: values["platform-log-level"] ?? "shipped",
    from: fromOption(values.from),
    log,
  };
}
