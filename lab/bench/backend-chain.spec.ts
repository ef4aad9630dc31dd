import assert from "node:assert/strict";
import { test } from "node:test";
import { backendChains, ceilingApplicationName, chainOfBackend } from "./backend-chain.js";

const databases = { platform: "postgres", plain: "plain_chain" };

test("a backend belongs to the chain whose database it serves, whatever its application name", () => {
  assert.equal(chainOfBackend({ pid: 1, datname: "postgres", applicationName: "orders" }, databases), "platform");
  assert.equal(chainOfBackend({ pid: 2, datname: "plain_chain", applicationName: "plain-receipts" }, databases), "plain");
  assert.equal(chainOfBackend({ pid: 3, datname: "postgres", applicationName: "" }, databases), "platform");
});

test("the database ceiling's backends are the ceiling's, though they use the plain chain's database", () => {
  assert.equal(chainOfBackend({ pid: 4, datname: "plain_chain", applicationName: ceilingApplicationName }, databases), "db");
});

test("the bench's watchers, the server's background processes and other databases belong to no chain", () => {
  assert.equal(chainOfBackend({ pid: 5, datname: "postgres", applicationName: "bench-queue-watch" }, databases), undefined);
  assert.equal(chainOfBackend({ pid: 6, datname: null, applicationName: "" }, databases), undefined);
  assert.equal(chainOfBackend({ pid: 7, datname: "template1", applicationName: "psql" }, databases), undefined);
  const chains = backendChains(
    [
      { pid: 1, datname: "postgres", applicationName: "pricing" },
      { pid: 6, datname: null, applicationName: "" },
      { pid: 8, datname: "plain_chain", applicationName: "plain-orders" },
    ],
    databases,
  );
  assert.deepEqual(
    [...chains],
    [
      [1, "platform"],
      [8, "plain"],
    ],
  );
});
