import { test } from "node:test";
import assert from "node:assert/strict";
import { callsEndAt, defaultDeadlineBudget, minAttemptMs, statementTimeoutMs } from "./deadline-budget.js";

test("calls end a hop reserve before the deadline", () => {
  assert.equal(callsEndAt(1000, 5), 995);
  assert.equal(callsEndAt(1000, 0), 1000);
});

test("a minimum attempt is a hop reserve per service crossed plus the minimum budget", () => {
  assert.equal(minAttemptMs({ hopReserveMs: 5, minBudgetMs: 10 }), 15);
  assert.equal(minAttemptMs({ hopReserveMs: 5, minBudgetMs: 10 }, 3), 25);
  assert.equal(minAttemptMs(defaultDeadlineBudget, 0), defaultDeadlineBudget.minBudgetMs);
});

test("statement_timeout keeps the hop reserve back, whole milliseconds, never 0 (which would mean none)", () => {
  assert.equal(statementTimeoutMs(100.9, 5), 95);
  assert.equal(statementTimeoutMs(5, 5), 1);
  assert.equal(statementTimeoutMs(-20, 5), 1);
});
