import assert from "node:assert/strict";
import { test } from "node:test";
import { isUnreturnedLocalJobs } from "./unreturned-jobs.js";

test("only graphile-worker's failed hand-back of its local queue is recognized", () => {
  assert.equal(
    isUnreturnedLocalJobs(new Error("Error occurred whilst returning jobs from local queue to database queue: connect ECONNREFUSED 127.0.0.1:5432")),
    true,
  );
  assert.equal(isUnreturnedLocalJobs(new Error("Connection terminated unexpectedly")), false);
  // Its retries' own message, raised while the queue still runs, goes to graphile-worker's major-error path, not here.
  assert.equal(
    isUnreturnedLocalJobs(new Error("Error occurred whilst returning jobs from local queue to database queue; raising major error after 3 (>= 3) attempts")),
    false,
  );
  assert.equal(isUnreturnedLocalJobs("Error occurred whilst returning jobs from local queue to database queue: x"), false);
  assert.equal(isUnreturnedLocalJobs(undefined), false);
});
