/**
 * Prometheus histograms from a service's /metrics text, and quantiles from
 * them the way PromQL's histogram_quantile computes them (linear within the
 * bucket the rank falls in).
 */

/** One histogram series: cumulative bucket counts by upper bound, plus sum and count. */
export interface Histogram {
  labels: Record<string, string>;
  buckets: { le: number; count: number }[];
  sum: number;
  count: number;
}

const sampleLine = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})?\s+(\S+)/;
const labelPair = /(\w+)="((?:[^"\\]|\\.)*)"/g;

/** Every series of histogram `name` in the exposition text, keyed by its labels (without `le`). */
export function readHistograms(text: string, name: string): Map<string, Histogram> {
  const out = new Map<string, Histogram>();
  const get = (labels: Record<string, string>) => {
    const key = JSON.stringify(Object.entries(labels).sort());
    let h = out.get(key);
    if (h === undefined) {
      h = { labels, buckets: [], sum: 0, count: 0 };
      out.set(key, h);
    }
    return h;
  };
  for (const line of text.split("\n")) {
    const m = sampleLine.exec(line);
    if (!m || !m[1]!.startsWith(name)) continue;
    const suffix = m[1]!.slice(name.length);
    if (suffix !== "_bucket" && suffix !== "_sum" && suffix !== "_count") continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(labelPair)) labels[l[1]!] = l[2]!;
    const value = Number(m[3]);
    const le = labels["le"];
    delete labels["le"];
    const h = get(labels);
    if (suffix === "_bucket" && le !== undefined) h.buckets.push({ le: le === "+Inf" ? Infinity : Number(le), count: value });
    else if (suffix === "_sum") h.sum = value;
    else if (suffix === "_count") h.count = value;
  }
  for (const h of out.values()) h.buckets.sort((a, b) => a.le - b.le);
  return out;
}

/** What happened between two scrapes of the same series (counters only grow while the process lives). */
export function difference(after: Histogram, before: Histogram | undefined): Histogram {
  if (before === undefined) return after;
  return {
    labels: after.labels,
    buckets: after.buckets.map((b) => ({ le: b.le, count: b.count - (before.buckets.find((x) => x.le === b.le)?.count ?? 0) })),
    sum: after.sum - before.sum,
    count: after.count - before.count,
  };
}

/**
 * The q-quantile in the histogram's unit, or undefined without
 * observations. A rank in the +Inf bucket answers the largest finite bound
 * (as histogram_quantile does): the truth is at least that.
 */
export function quantile(h: Histogram, q: number): number | undefined {
  if (h.count <= 0 || h.buckets.length === 0) return undefined;
  const rank = q * h.count;
  let lower = 0;
  let below = 0;
  for (const b of h.buckets) {
    if (b.count >= rank) {
      if (b.le === Infinity) return lower;
      const inBucket = b.count - below;
      return inBucket <= 0 ? b.le : lower + ((b.le - lower) * (rank - below)) / inBucket;
    }
    lower = b.le;
    below = b.count;
  }
  return lower;
}
