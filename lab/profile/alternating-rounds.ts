import { median } from "../stats.js";

/** CPU microseconds per request of the platform's side and the plain side, medians over the rounds. */
export interface AlternatingResult {
  platformUs: number;
  plainUs: number;
  addedUs: number;
  /** Each round's [platform, plain]. */
  rounds: [number, number][];
}

/**
 * Runs `measure` on the platform's side and the plain side in turns, after a
 * warm-up round of each (JIT, metric series, breakers), so that whatever
 * else the machine does falls on both: the in-process cost tools' one loop.
 */
export async function alternatingRounds(
  measure: (side: "platform" | "plain", n: number) => Promise<number>,
  opts: { n: number; warmupN: number; rounds: number },
): Promise<AlternatingResult> {
  const byVariant = await alternatingVariants(["platform", "plain"] as const, measure, opts);
  const rounds = byVariant.platform.map((p, i): [number, number] => [p, byVariant.plain[i]!]);
  const platformUs = median(byVariant.platform);
  const plainUs = median(byVariant.plain);
  return {
    platformUs: Math.round(platformUs),
    plainUs: Math.round(plainUs),
    addedUs: Math.round(platformUs - plainUs),
    rounds: rounds.map(([a, b]) => [Math.round(a), Math.round(b)]),
  };
}

/**
 * The same loop over any number of variants: a warm-up round of each, then
 * `rounds` rounds in which every variant is measured once, in the same
 * order. Returns each variant's per-round results (unrounded), so that a
 * caller can take the median of per-round differences: two variants
 * measured seconds apart in the same round share that moment's noise.
 */
export async function alternatingVariants<V extends string>(
  variants: readonly V[],
  measure: (variant: V, n: number) => Promise<number>,
  opts: { n: number; warmupN: number; rounds: number; onRound?: (round: number) => void },
): Promise<Record<V, number[]>> {
  for (const v of variants) await measure(v, opts.warmupN);
  const out = Object.fromEntries(variants.map((v) => [v, [] as number[]])) as Record<V, number[]>;
  for (let i = 0; i < opts.rounds; i++) {
    for (const v of variants) out[v].push(await measure(v, opts.n));
    opts.onRound?.(i + 1);
  }
  return out;
}

/** Median over the rounds of `a[i] - b[i]`: what `a` adds over `b`, each round's noise shared by both. */
export function medianDifference(a: readonly number[], b: readonly number[]): number {
  return median(a.map((x, i) => x - b[i]!));
}

/**
 * CPU microseconds (user + system, this process) per call of `call`, made
 * `n` times by `concurrency` callers at once: the cost tools' measuring
 * loop. `call` gets the call's number (from 1), e.g. for a request id.
 */
export async function cpuPerCall(n: number, concurrency: number, call: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const before = process.cpuUsage();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next++;
        await call(next);
      }
    }),
  );
  const used = process.cpuUsage(before);
  return (used.user + used.system) / n;
}
