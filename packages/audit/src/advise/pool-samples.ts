/**
 * Database connections in use, sampled from each service's /metrics
 * (`db_pool_connections{state="in_use"}`) while the measured period runs:
 * the pool is the database's bulkhead, and its concurrency is read, not
 * inferred from statement times (a transaction also holds its connection
 * between statements).
 */
export type PoolSamples = Map<string, number[]>;

function inUse(text: string): number | undefined {
  let sum: number | undefined;
  for (const line of text.split("\n")) {
    const m = /^db_pool_connections\{([^}]*)\}\s+(\S+)/.exec(line);
    if (m && /state="in_use"/.test(m[1]!)) sum = (sum ?? 0) + Number(m[2]);
  }
  return sum;
}

/** Samples every `intervalMs` until `until` resolves; services without a database are left out. */
export async function samplePools(services: { service: string; adminUrl: string }[], until: Promise<unknown>, intervalMs = 1000): Promise<PoolSamples> {
  const out: PoolSamples = new Map();
  let done = false;
  void until.finally(() => (done = true));
  while (!done) {
    await Promise.all(
      services.map(async (s) => {
        const text = await fetch(`${s.adminUrl}/metrics`, { signal: AbortSignal.timeout(2000) }).then(
          (r) => r.text(),
          () => "",
        );
        const n = inUse(text);
        if (n !== undefined) out.set(s.service, [...(out.get(s.service) ?? []), n]);
      }),
    );
    await Promise.race([until, new Promise((r) => setTimeout(r, intervalMs))]);
  }
  return out;
}
