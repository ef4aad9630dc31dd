/**
 * A histogram observed through cells reads exactly as one observed through
 * prom-client's own `observe`: the same series, buckets, sums and counts on
 * /metrics, whatever the values (on a bound, past the last one, tiny,
 * repeated), mixed with direct `observe` calls, after `reset()` and
 * `remove()`. Two registries hold a histogram of the same name each, one
 * fed by `observe`, the other by cells, and their text must be equal.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Histogram, Registry } from "prom-client";
import { histogramCellsOf } from "./metric-cells.js"; // @platform/resilience's, where prom-client is a dependency

const buckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

function pair(labelNames: string[]) {
  const make = () => {
    const registry = new Registry();
    const h = new Histogram({ name: "rpc_server_duration_seconds", help: "Time to serve an RPC.", labelNames, buckets, registers: [registry] });
    return { registry, h };
  };
  return { direct: make(), cells: make() };
}

/** Values that hit every kind of bucket edge, in a fixed pseudo-random order. */
function values(n: number): number[] {
  const out = [0, 0.001, 0.0025, 30, 31, 1e-9, 0.1 + 0.2, 10];
  let x = 7;
  for (let i = 0; i < n; i++) {
    x = (x * 48271) % 2147483647;
    out.push((x / 2147483647) ** 3 * 40);
  }
  return out;
}

test("cells give the text prom-client's observe gives: two labels, several series", async () => {
  const { direct, cells } = pair(["procedure", "code"]);
  const c = histogramCellsOf(cells.h, ["procedure", "code"]);
  const series = [
    ["/a.v1.A/Get", "ok"],
    ["/a.v1.A/Get", "unavailable"],
    ["/b.v1.B/Put", "ok"],
  ] as const;
  values(500).forEach((v, i) => {
    const [procedure, code] = series[i % series.length]!;
    direct.h.observe({ procedure, code }, v);
    c.cell(procedure, code).observe(v);
  });
  const text = await cells.registry.metrics();
  assert.equal(text, await direct.registry.metrics());
  assert.match(text, /rpc_server_duration_seconds_bucket\{le="\+Inf",procedure="\/b.v1.B\/Put",code="ok"\} \d+/);
});

test("cells and direct observe calls on the same series add up, as two observe callers would", async () => {
  const { direct, cells } = pair(["db"]);
  const c = histogramCellsOf(cells.h, ["db"]);
  values(200).forEach((v, i) => {
    direct.h.observe({ db: "orders" }, v);
    if (i % 3 === 0) cells.h.observe({ db: "orders" }, v);
    else c.cell("orders").observe(v);
  });
  assert.equal(await cells.registry.metrics(), await direct.registry.metrics());
});

test("an unlabelled histogram", async () => {
  const { direct, cells } = pair([]);
  const c = histogramCellsOf(cells.h, []);
  for (const v of values(100)) {
    direct.h.observe(v);
    c.cell().observe(v);
  }
  assert.equal(await cells.registry.metrics(), await direct.registry.metrics());
});

test("after reset() and remove() a cell counts into a fresh series, as observe does", async () => {
  const { direct, cells } = pair(["procedure"]);
  const c = histogramCellsOf(cells.h, ["procedure"]);
  const both = (procedure: string, v: number) => {
    direct.h.observe({ procedure }, v);
    c.cell(procedure).observe(v);
  };
  both("/x", 0.2);
  both("/y", 0.3);
  direct.h.reset();
  cells.h.reset();
  both("/x", 0.004);
  assert.equal(await cells.registry.metrics(), await direct.registry.metrics());
  direct.h.remove({ procedure: "/x" });
  cells.h.remove({ procedure: "/x" });
  assert.equal(await cells.registry.metrics(), await direct.registry.metrics());
  both("/x", 7);
  both("/y", 0.02);
  assert.equal(await cells.registry.metrics(), await direct.registry.metrics());
});

test("a value that is no finite number is refused as observe refuses it", () => {
  const { cells } = pair(["procedure"]);
  const c = histogramCellsOf(cells.h, ["procedure"]).cell("/x");
  assert.throws(() => c.observe(Number.NaN), /Value is not a valid number/);
});

test("one set of cells per histogram: the same cell for the same label values", () => {
  const { cells } = pair(["procedure", "code"]);
  assert.equal(histogramCellsOf(cells.h, ["procedure", "code"]).cell("/a", "ok"), histogramCellsOf(cells.h, ["procedure", "code"]).cell("/a", "ok"));
  assert.notEqual(histogramCellsOf(cells.h, ["procedure", "code"]).cell("/a", "ok"), histogramCellsOf(cells.h, ["procedure", "code"]).cell("/a", "unknown"));
});
