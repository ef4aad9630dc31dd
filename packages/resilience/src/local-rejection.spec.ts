import assert from "node:assert/strict";
import { it } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import { localRejection, markLocalRejection } from "./local-rejection.js";

it("marks an error as a local rejection without changing what it looks like", () => {
  const err = new ConnectError("stock: bulkhead full (1 in use, 0 queued)", Code.ResourceExhausted);
  assert.equal(markLocalRejection(err, { kind: "bulkhead_full", dependency: "stock" }), err);
  assert.deepEqual(localRejection(err), { kind: "bulkhead_full", dependency: "stock" });
  // Not enumerable: does not leak into logs or JSON.
  assert.deepEqual(Object.keys(err).includes("kind"), false);
  assert.equal(JSON.stringify(err).includes("bulkhead_full"), false);
  // Survives ConnectError.from, which returns a ConnectError as is.
  assert.equal(localRejection(ConnectError.from(err)), localRejection(err));
});

it("finds no mark on other values", () => {
  assert.equal(localRejection(new ConnectError("down", Code.Unavailable)), undefined);
  assert.equal(localRejection(new Error("x")), undefined);
  assert.equal(localRejection("x"), undefined);
  assert.equal(localRejection(null), undefined);
  assert.equal(localRejection(undefined), undefined);
});
