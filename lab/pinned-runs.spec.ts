import { test } from "node:test";
import assert from "node:assert/strict";
import { coreShares, parseCpuList } from "./pinned-runs.js";

test("a CPU list: ranges and single CPUs, in order", () => {
  assert.deepEqual(parseCpuList("0-1"), [0, 1]);
  assert.deepEqual(parseCpuList("0-1,4,6-7\n"), [0, 1, 4, 6, 7]);
  assert.deepEqual(parseCpuList("\t3"), [3]);
  assert.throws(() => parseCpuList("0-1,x"), /not a CPU list: "0-1,x"/);
});

const status = (list: string) => `Name:\tnode\nCpus_allowed:\tff\nCpus_allowed_list:\t${list}\nMems_allowed:\t1\n`;

test("shares: disjoint and equal, the rest left out", () => {
  assert.deepEqual(coreShares(2, status("0-1")), ["0", "1"]);
  assert.deepEqual(coreShares(2, status("0-4")), ["0,1", "2,3"]);
  assert.deepEqual(coreShares(2, status("2,5-7")), ["2,5", "6,7"]);
  assert.deepEqual(coreShares(1, status("0-3")), ["0,1,2,3"]);
});

test("no shares where the cores cannot be shared out: fewer CPUs than runs, no CPU list", () => {
  assert.equal(coreShares(2, status("0")), undefined);
  assert.equal(coreShares(3, status("0-1")), undefined);
  assert.equal(coreShares(0, status("0-1")), undefined);
  assert.equal(coreShares(2, "Name:\tnode\n"), undefined);
});
