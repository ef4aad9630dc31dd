/** What a counter's collect hook needs of prom-client's Counter (structural: this package does not depend on prom-client). */
interface CounterLike {
  inc(labels: Record<string, string>, value: number): void;
}
/** What a gauge's collect hook needs of prom-client's Gauge. */
interface GaugeLike {
  set(labels: Record<string, string>, value: number): void;
}

/** One labelled value, counted in a plain number on the request path. */
export interface MetricCell {
  readonly labels: Record<string, string>;
  value: number;
}

/**
 * Metric cells: the platform's hot-path metrics counted without
 * prom-client's per-call label work (docs/performance.md). Shared by the
 * runtime and the database package, which both count on every request;
 * structural types only, so this package needs no prom-client.
 *
 * The labelled values of one counter or gauge, kept in plain numbers where
 * requests count them and handed to prom-client when the metric is read
 * (its collect hook runs before every scrape and every `get()`).
 *
 * prom-client's own `inc`/`dec` builds a string key from the label values
 * and validates the label names on every call; a request counts its
 * in-flight gauge up and down and its outcome once at every hop. A cell is
 * looked up by its label values in nested maps (no string built) and its
 * number changed in place (docs/performance.md).
 *
 * One set of cells per metric (`cellsOf`), so that two servers in one
 * process (tests) count into the same series, as they did through the
 * metric itself.
 */
export class MetricCells {
  private readonly byFirst = new Map<string, Map<string, MetricCell>>();

  constructor(private readonly labelNames: readonly [string] | readonly [string, string]) {}

  /** The cell of these label values (in `labelNames` order; one or two). */
  cell(first: string, second = ""): MetricCell {
    return cellOf(this.byFirst, first, second, this.make);
  }

  /** Made once per instance, so that a lookup allocates no closure. */
  private readonly make = (first: string, second: string): MetricCell => {
    const [a, b] = this.labelNames;
    return { labels: b === undefined ? { [a]: first } : { [a]: first, [b]: second }, value: 0 };
  };

  /**
   * A counter's collect hook: adds what was counted since the last read.
   * `fixed` labels (the same for every cell) are added to each series.
   */
  flushInto(counter: CounterLike, fixed?: Record<string, string>): void {
    for (const inner of this.byFirst.values()) {
      for (const c of inner.values()) {
        if (c.value === 0) continue;
        counter.inc(fixed ? { ...c.labels, ...fixed } : c.labels, c.value);
        c.value = 0;
      }
    }
  }

  /** A gauge's collect hook: sets every series to its cell's value. */
  setInto(gauge: GaugeLike): void {
    for (const inner of this.byFirst.values()) for (const c of inner.values()) gauge.set(c.labels, c.value);
  }
}

const cells = new WeakMap<object, MetricCells>();

/** The cells of a metric, made on first use. */
export function cellsOf(metric: object, labelNames: readonly [string] | readonly [string, string]): MetricCells {
  let c = cells.get(metric);
  if (c === undefined) {
    c = new MetricCells(labelNames);
    cells.set(metric, c);
  }
  return c;
}

/** The part of prom-client's Histogram (15.x) a HistogramCell writes to: one series per label set. */
interface HistogramSeries {
  labels: Record<string, string | number>;
  bucketValues: Record<string, number>;
  sum: number;
  count: number;
}
interface HistogramInternals {
  hashMap: Record<string, HistogramSeries>;
  readonly upperBounds: readonly number[];
  zero(labels: Record<string, string | number>): void;
  observe(labels: Record<string, string | number>, value: number): void;
}

/**
 * One series of a prom-client histogram, observed without prom-client's
 * per-call work: its `observe` validates the label names, builds the
 * series' key string from the label values and converts the bucket bound
 * to a string key, on every call (per request, at every hop). A cell finds
 * its series once, keeps it, and adds to it exactly what `observe` adds
 * (the bucket, the sum in the same order, the count), so every read of the
 * histogram (/metrics, `get()`) is what prom-client's own `observe` would
 * have produced; direct `observe` calls on the same series add up with it
 * (metric-cells.spec.ts compares the two). After `reset()` or `remove()`
 * the series is gone from prom-client's map and the cell starts a fresh one
 * there, as `observe` would.
 */
export class HistogramCell {
  private series: HistogramSeries | undefined;
  private key: string | undefined;
  private readonly bounds: readonly number[];
  private readonly boundKeys: readonly string[];

  constructor(
    private readonly histogram: HistogramInternals,
    readonly labels: Record<string, string>,
  ) {
    this.bounds = histogram.upperBounds;
    // prom-client keys bucketValues by the bound as a string (an object's keys).
    this.boundKeys = this.bounds.map(String);
  }

  observe(value: number): void {
    // prom-client throws on a value that is no finite number: let it.
    if (!Number.isFinite(value)) {
      this.histogram.observe(this.labels, value);
      return;
    }
    let s = this.series;
    if (s === undefined || this.histogram.hashMap[this.key!] !== s) s = this.attach();
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    s.sum += value;
    s.count += 1;
    if (i < bounds.length) s.bucketValues[this.boundKeys[i]!]! += 1;
  }

  /** Finds this cell's series in the histogram (made with `zero` when there is none yet). */
  private attach(): HistogramSeries {
    const find = () => {
      for (const [key, s] of Object.entries(this.histogram.hashMap)) if (sameLabels(s.labels, this.labels)) return [key, s] as const;
      return undefined;
    };
    let found = find();
    if (found === undefined) {
      this.histogram.zero(this.labels);
      found = find();
      if (found === undefined) throw new Error("HistogramCell: prom-client's histogram keeps its series elsewhere (not prom-client 15?)");
    }
    [this.key, this.series] = found;
    return found[1];
  }
}

function sameLabels(a: Record<string, string | number>, b: Record<string, string>): boolean {
  const keys = Object.keys(b);
  if (Object.keys(a).length !== keys.length) return false;
  for (const k of keys) if (String(a[k]) !== b[k]) return false;
  return true;
}

/**
 * The cells of one histogram, by their label values (in the histogram's
 * label-name order; up to two), looked up in nested maps (no string built).
 */
export class HistogramCells {
  private readonly byFirst = new Map<string, Map<string, HistogramCell>>();

  constructor(
    private readonly histogram: object,
    private readonly labelNames: readonly [] | readonly [string] | readonly [string, string],
  ) {}

  cell(first = "", second = ""): HistogramCell {
    return cellOf(this.byFirst, first, second, this.make);
  }

  /** Made once per instance, so that a lookup allocates no closure. */
  private readonly make = (first: string, second: string): HistogramCell => {
    const [a, b] = this.labelNames;
    const labels: Record<string, string> = {};
    if (a !== undefined) labels[a] = first;
    if (b !== undefined) labels[b] = second;
    return new HistogramCell(this.histogram as HistogramInternals, labels);
  };
}

const histogramCells = new WeakMap<object, HistogramCells>();

/** The cells of a prom-client Histogram (one set per histogram, as `cellsOf`). */
export function histogramCellsOf(histogram: object, labelNames: readonly [] | readonly [string] | readonly [string, string]): HistogramCells {
  let c = histogramCells.get(histogram);
  if (c === undefined) {
    c = new HistogramCells(histogram, labelNames);
    histogramCells.set(histogram, c);
  }
  return c;
}

/** The cell of a label pair in a two-level map, made by `make` the first time (one or two `Map.get`s per use, no key string built). */
function cellOf<C>(byFirst: Map<string, Map<string, C>>, first: string, second: string, make: (first: string, second: string) => C): C {
  let inner = byFirst.get(first);
  if (inner === undefined) {
    inner = new Map();
    byFirst.set(first, inner);
  }
  let c = inner.get(second);
  if (c === undefined) {
    c = make(first, second);
    inner.set(second, c);
  }
  return c;
}
