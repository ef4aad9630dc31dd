import assert from "node:assert/strict";
import { test } from "node:test";
import { chainSliceMs } from "./cells.js";
import { benchOptions } from "./options.js";

const log = () => {};

test("the full bench shares its 32-client legs between the chains in slices; the quick bench's legs are too short and run leg after leg", () => {
  assert.equal(benchOptions({}, log).sliceMs, chainSliceMs);
  assert.equal(benchOptions({ quick: true }, log).sliceMs, 0);
  assert.equal(benchOptions({ seconds: "0.5" }, log).sliceMs, 0, "a 1 s shared leg holds two 0.5 s slices, one per chain: too few");
  assert.equal(benchOptions({ "slice-ms": "0" }, log).sliceMs, 0);
  assert.equal(benchOptions({ "slice-ms": "250" }, log).sliceMs, 250);
});

test("a slice the legs cannot hold twice per chain, or a slice that is not a whole number, is refused with the option's name", () => {
  assert.throws(() => benchOptions({ "slice-ms": "2000" }, log), /--slice-ms 2000 needs legs of at least 4 s/);
  assert.throws(() => benchOptions({ "slice-ms": "2.5" }, log), /--slice-ms must be a positive integer/);
  assert.throws(() => benchOptions({ "slice-ms": "-1" }, log), /--slice-ms must be a positive integer/);
});

test("--method takes one of the bench's methods, and nothing else", () => {
  assert.equal(benchOptions({ method: "PlaceOrder" }, log).method, "PlaceOrder");
  assert.equal(benchOptions({}, log).method, undefined);
  assert.throws(() => benchOptions({ method: "placeorder" }, log), /--method must be one of PlaceOrder, ListProducts, GetOrder, not "placeorder"/);
});
