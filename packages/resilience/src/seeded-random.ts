/**
 * A small deterministic PRNG (mulberry32) with the same shape as
 * `Math.random`, for tests and reproducible experiments: every unit that
 * draws random numbers takes a `random: () => number`, and a fixed seed
 * makes a run repeatable.
 *
 * Not for anything security-related.
 */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
