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
  await measure("platform", opts.warmupN);
  await measure("plain", opts.warmupN);
  const rounds: [number, number][] = [];
  for (let i = 0; i < opts.rounds; i++) rounds.push([await measure("platform", opts.n), await measure("plain", opts.n)]);
  const platformUs = median(rounds.map((r) => r[0]));
  const plainUs = median(rounds.map((r) => r[1]));
  return {
    platformUs: Math.round(platformUs),
    plainUs: Math.round(plainUs),
    addedUs: Math.round(platformUs - plainUs),
    rounds: rounds.map(([a, b]) => [Math.round(a), Math.round(b)]),
  };
}
