import type { Counter, Gauge } from "prom-client";

/** One labelled value, counted in a plain number on the request path. */
export interface MetricCell {
  readonly labels: Record<string, string>;
  value: number;
}

/**
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
    let inner = this.byFirst.get(first);
    if (inner === undefined) {
      inner = new Map();
      this.byFirst.set(first, inner);
    }
    let c = inner.get(second);
    if (c === undefined) {
      const [a, b] = this.labelNames;
      c = { labels: b === undefined ? { [a]: first } : { [a]: first, [b]: second }, value: 0 };
      inner.set(second, c);
    }
    return c;
  }

  /**
   * A counter's collect hook: adds what was counted since the last read.
   * `fixed` labels (the same for every cell) are added to each series.
   */
  flushInto(counter: Counter<string>, fixed?: Record<string, string>): void {
    for (const inner of this.byFirst.values()) {
      for (const c of inner.values()) {
        if (c.value === 0) continue;
        counter.inc(fixed ? { ...c.labels, ...fixed } : c.labels, c.value);
        c.value = 0;
      }
    }
  }

  /** A gauge's collect hook: sets every series to its cell's value. */
  setInto(gauge: Gauge<string>): void {
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
