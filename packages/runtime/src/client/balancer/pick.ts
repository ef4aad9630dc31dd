import type { Closable, Endpoint } from "./endpoint.js";

/**
 * Power of two choices: of two replicas drawn at random, the one with the
 * lower cost (endpoint.ts). Nearly as good as asking every replica, without
 * the herd that always sending to the single best one causes when many
 * callers see the same numbers.
 */
export function pickOfTwo<C extends Closable>(candidates: readonly Endpoint<C>[], random: () => number): Endpoint<C> | undefined {
  if (candidates.length <= 1) return candidates[0];
  const i = Math.floor(random() * candidates.length);
  let j = Math.floor(random() * (candidates.length - 1));
  if (j >= i) j++;
  const a = candidates[i]!;
  const b = candidates[j]!;
  const average = averageLatencyMs(candidates);
  return b.cost(average) < a.cost(average) ? b : a;
}

/** The mean of the replicas' estimates: the stand-in for one without any. */
function averageLatencyMs(candidates: readonly Endpoint<Closable>[]): number {
  let sum = 0;
  let n = 0;
  for (const c of candidates) {
    const e = c.latency.estimateMs;
    if (e !== undefined) {
      sum += e;
      n++;
    }
  }
  return n === 0 ? 1 : sum / n;
}
