import { test } from "node:test";
import assert from "node:assert/strict";
import { ConfigError, readEnv } from "../config/config.js";
import { defaultIsolation, readDependencyConfig } from "./dependency-config.js";

const read = (env: Record<string, string>, defaults = defaultIsolation) => readEnv(env, (r) => readDependencyConfig(r, "stock", "http://x", defaults));

test("defaults: an adaptive limit per method class within the service's declared bounds", () => {
  const d = read({}, { maxConcurrent: 12, minConcurrent: 3, maxQueue: 6 });
  assert.deepEqual(
    {
      limit: d.isolation.limit,
      max: d.isolation.maxConcurrent,
      min: d.isolation.minConcurrent,
      queue: d.isolation.maxQueue,
      classes: d.isolation.methodClasses,
    },
    { limit: "adaptive", max: 12, min: 3, queue: 6, classes: {} },
  );
  assert.equal(read({}).isolation.maxConcurrent, defaultIsolation.maxConcurrent);
});

test("fixed limits, bounds, queue and method classes from the dependency's own variables", () => {
  const d = read({
    STOCK_LIMIT: "fixed",
    STOCK_MAX_CONCURRENT: "7",
    STOCK_MIN_CONCURRENT: "2",
    STOCK_MAX_QUEUE: "0",
    STOCK_METHOD_CLASSES: "GetPrices=read, Export=bulk",
  });
  assert.equal(d.isolation.limit, "fixed");
  assert.equal(d.isolation.maxConcurrent, 7);
  assert.equal(d.isolation.minConcurrent, 2);
  assert.equal(d.isolation.maxQueue, 0);
  assert.deepEqual(d.isolation.methodClasses, { GetPrices: "read", Export: "bulk" });
});

test("a maximum below the default floor lowers the floor with it", () => {
  const d = read({ STOCK_MAX_CONCURRENT: "1" });
  assert.equal(d.isolation.minConcurrent, 1);
});

test("refuses a floor above the ceiling, an unknown limit kind and malformed classes, naming each variable", () => {
  assert.throws(
    () => read({ STOCK_MAX_CONCURRENT: "4", STOCK_MIN_CONCURRENT: "5", STOCK_LIMIT: "magic", STOCK_METHOD_CLASSES: "GetPrices=Read" }),
    (e: unknown) =>
      e instanceof ConfigError &&
      e.problems.length === 3 &&
      /STOCK_MIN_CONCURRENT \(5\) must not exceed STOCK_MAX_CONCURRENT \(4\)/.test(e.message) &&
      /STOCK_LIMIT must be one of adaptive, fixed/.test(e.message) &&
      /STOCK_METHOD_CLASSES must be Method=class pairs/.test(e.message),
  );
});
