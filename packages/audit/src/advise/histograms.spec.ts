import { test } from "node:test";
import assert from "node:assert/strict";
import { difference, quantile, readHistograms } from "./histograms.js";

const text = `# HELP x_seconds test
# TYPE x_seconds histogram
x_seconds_bucket{dependency="orders",le="0.01"} 90
x_seconds_bucket{dependency="orders",le="0.1"} 99
x_seconds_bucket{dependency="orders",le="1"} 100
x_seconds_bucket{dependency="orders",le="+Inf"} 100
x_seconds_sum{dependency="orders"} 1.5
x_seconds_count{dependency="orders"} 100
x_seconds_bucket{dependency="stock",le="0.01"} 0
x_seconds_bucket{dependency="stock",le="+Inf"} 4
x_seconds_count{dependency="stock"} 4
x_seconds_sum{dependency="stock"} 40
`;

test("reads each series and interpolates quantiles within the bucket, like histogram_quantile", () => {
  const hs = [...readHistograms(text, "x_seconds").values()];
  const orders = hs.find((h) => h.labels["dependency"] === "orders")!;
  assert.equal(orders.count, 100);
  assert.equal(quantile(orders, 0.5), 0.01 * (50 / 90));
  assert.equal(quantile(orders, 0.99), 0.1, "rank 99 ends the second bucket");
  assert.ok(Math.abs(quantile(orders, 0.999)! - (0.1 + 0.9 * 0.9)) < 1e-9, "rank 99.9 is 90 % into the last bucket");
  const stock = hs.find((h) => h.labels["dependency"] === "stock")!;
  assert.equal(quantile(stock, 0.5), 0.01, "in +Inf: the largest finite bound, a lower bound of the truth");
});

test("the difference of two scrapes is what happened between them; no observations, no quantile", () => {
  const before = [...readHistograms(text, "x_seconds").values()][0]!;
  const after = { ...before, buckets: before.buckets.map((b) => ({ ...b, count: b.count + 10 })), count: 110, sum: 2 };
  const d = difference(after, before);
  assert.equal(d.count, 10);
  assert.equal(quantile(d, 0.5), 0.01 * (5 / 10));
  assert.equal(quantile(difference(before, before), 0.5), undefined);
});
