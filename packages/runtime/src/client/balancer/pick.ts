import type { Closable, Endpoint } from "./endpoint.js";

/**
 * Power of two choices: two replicas drawn at random, and of those the
 * cheaper one (endpoint.ts) by odds in proportion to 1/cost. Nearly as good
 * as asking every replica, without the herd that always sending to the
 * single best one causes when many callers see the same numbers.
 *
 * Odds, not the strict minimum Linkerd and Finagle take: with few calls
 * outstanding, the cost is the latency alone, and a strict comparison turns
 * a small difference (one replica's code still cold, its first connection
 * still opening) into all or nothing: the cheapest of three replicas takes
 * every draw it is in, two calls in three, and the dearest none, so it
 * stays cold. By odds, a replica a quarter as fast still gets a fifth of
 * its draws, while one that stopped answering (its oldest call's age
 * growing into seconds against milliseconds) gets next to none.
 */
export function pickOfTwo<C extends Closable>(candidates: readonly Endpoint<C>[], random: () => number): Endpoint<C> | undefined {
  if (candidates.length <= 1) return candidates[0];
  const i = Math.floor(random() * candidates.length);
  let j = Math.floor(random() * (candidates.length - 1));
  if (j >= i) j++;
  const a = candidates[i]!;
  const b = candidates[j]!;
  const average = averageLatencyMs(candidates);
  const costA = a.cost(average);
  const costB = b.cost(average);
  // P(a) = (1/costA) / (1/costA + 1/costB)
  return random() * (costA + costB) < costB ? a : b;
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
