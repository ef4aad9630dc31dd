import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import { FakeClock } from "./clock.js";
import { markLocalRejection } from "./local-rejection.js";
import { RetryBudget } from "./retry-budget.js";
import { type RetryDecisionInput, decideRetry } from "./retry-decision.js";
import { defaultRetryPolicy, neverRetryableCodes, noRetryPolicy } from "./retry-policy.js";

/** A budget that records how often it was asked. */
function countingBudget(grant = true) {
  const b = { asked: 0, tryWithdraw: () => (b.asked++, grant) };
  return b;
}

function input(overrides: Partial<RetryDecisionInput> = {}): RetryDecisionInput {
  return {
    error: new ConnectError("stock: unavailable", Code.Unavailable),
    attempt: 1,
    policy: defaultRetryPolicy,
    remainingMs: 2_000,
    expectedAttemptMs: 100,
    idempotent: true,
    neverProcessed: false,
    budget: countingBudget(),
    random: () => 0.5,
    ...overrides,
  };
}

describe("decideRetry", () => {
  it("retries UNAVAILABLE with half the first cap when random() is 0.5", () => {
    const budget = countingBudget();
    assert.deepEqual(decideRetry(input({ budget })), { retry: true, delayMs: 25, reason: "retryable_code" });
    assert.equal(budget.asked, 1);
  });

  it("uses the backoff step of the attempt number", () => {
    assert.deepEqual(decideRetry(input({ attempt: 2, policy: { ...defaultRetryPolicy, maxAttempts: 5 } })), {
      retry: true,
      delayMs: 50,
      reason: "retryable_code",
    });
  });

  for (const code of neverRetryableCodes) {
    it(`never retries ${Code[code]}, even when never processed, listed, and idempotent`, () => {
      const budget = countingBudget();
      const policy = { ...defaultRetryPolicy, retryableCodes: [code, Code.Unavailable] };
      const d = decideRetry(input({ error: new ConnectError("x", code), neverProcessed: true, policy, budget }));
      assert.deepEqual(d, { retry: false, reason: "not_retryable_code" });
      assert.equal(budget.asked, 0);
    });
  }

  it("does not retry a code the policy does not list", () => {
    const d = decideRetry(input({ error: new ConnectError("boom", Code.Internal) }));
    assert.deepEqual(d, { retry: false, reason: "not_retryable_code" });
  });

  it("retries any other code when the call was never processed (e.g. REFUSED_STREAM surfacing as INTERNAL)", () => {
    const d = decideRetry(input({ error: new ConnectError("stream refused", Code.Internal), neverProcessed: true }));
    assert.deepEqual(d, { retry: true, delayMs: 25, reason: "never_processed" });
  });

  it("does not retry our own breaker's or bulkhead's rejection", () => {
    const err = markLocalRejection(new ConnectError("checkout: circuit open, next trial in ~3s", Code.Unavailable), {
      kind: "circuit_open",
      dependency: "checkout",
      retryAfterMs: 3_000,
    });
    const budget = countingBudget();
    assert.deepEqual(decideRetry(input({ error: err, neverProcessed: true, budget })), { retry: false, reason: "not_retryable_code" });
    assert.equal(budget.asked, 0);
  });

  describe("RESOURCE_EXHAUSTED", () => {
    const exhausted = new ConnectError("orders: overloaded", Code.ResourceExhausted);

    it("is not retried without a pushback hint", () => {
      assert.deepEqual(decideRetry(input({ error: exhausted })), { retry: false, reason: "not_retryable_code" });
    });

    it("is retried after at least the server's pushback", () => {
      assert.deepEqual(decideRetry(input({ error: exhausted, pushbackMs: 300 })), { retry: true, delayMs: 300, reason: "retryable_code" });
    });

    it("is not retried when the server says never", () => {
      assert.deepEqual(decideRetry(input({ error: exhausted, pushbackMs: "never" })), { retry: false, reason: "pushback_never" });
    });
  });

  it('honours pushback "never" for any retryable code, without touching the budget', () => {
    const budget = countingBudget();
    assert.deepEqual(decideRetry(input({ pushbackMs: "never", budget })), { retry: false, reason: "pushback_never" });
    assert.equal(budget.asked, 0);
  });

  it("waits the longer of backoff and pushback", () => {
    const short = decideRetry(input({ pushbackMs: 10 }));
    const long = decideRetry(input({ pushbackMs: 400 }));
    assert.ok(short.retry && short.delayMs === 25);
    assert.ok(long.retry && long.delayMs === 400);
  });

  it("rounds the delay up to whole milliseconds", () => {
    const d = decideRetry(input({ random: () => 0.123456 }));
    assert.ok(d.retry);
    assert.equal(d.delayMs, Math.ceil(0.123456 * 50));
  });

  it("does not retry a non-idempotent call that may have been processed", () => {
    const budget = countingBudget();
    assert.deepEqual(decideRetry(input({ idempotent: false, budget })), { retry: false, reason: "not_idempotent" });
    assert.equal(budget.asked, 0);
  });

  it("retries a non-idempotent call that was never processed", () => {
    assert.deepEqual(decideRetry(input({ idempotent: false, neverProcessed: true })), { retry: true, delayMs: 25, reason: "retryable_code" });
  });

  it("stops at maxAttempts", () => {
    const budget = countingBudget();
    assert.deepEqual(decideRetry(input({ attempt: 3, budget })), { retry: false, reason: "max_attempts" });
    assert.ok(decideRetry(input({ attempt: 2 })).retry);
    assert.equal(budget.asked, 0);
  });

  it("never retries under noRetryPolicy, whatever the error", () => {
    for (let code = Code.Canceled; code <= Code.Unauthenticated; code++) {
      for (const neverProcessed of [false, true]) {
        const d = decideRetry(input({ error: new ConnectError("x", code), policy: noRetryPolicy, neverProcessed, pushbackMs: 10, remainingMs: 1e9 }));
        assert.equal(d.retry, false, `${Code[code]} neverProcessed=${neverProcessed}`);
      }
    }
  });

  describe("deadline", () => {
    it("refuses when the delay plus an expected attempt does not fit", () => {
      // delay 25 + expected 100 = 125
      assert.deepEqual(decideRetry(input({ remainingMs: 125 })), { retry: false, reason: "deadline" });
      assert.deepEqual(decideRetry(input({ remainingMs: 60 })), { retry: false, reason: "deadline" });
      assert.ok(decideRetry(input({ remainingMs: 126 })).retry);
    });

    it("refuses to sleep past the deadline on a server's pushback", () => {
      assert.deepEqual(decideRetry(input({ pushbackMs: 5_000, remainingMs: 2_000 })), { retry: false, reason: "deadline" });
    });

    it("refuses when the deadline has already passed, even with no latency estimate", () => {
      assert.deepEqual(decideRetry(input({ remainingMs: 0, expectedAttemptMs: 0, random: () => 0 })), { retry: false, reason: "deadline" });
      assert.deepEqual(decideRetry(input({ remainingMs: -5, expectedAttemptMs: 0 })), { retry: false, reason: "deadline" });
    });

    it("leaves an attempt at least minAttemptMs, however fast the dependency fails", () => {
      // A dependency failing in 2 ms: the estimate alone would start an
      // attempt with 28 ms left, which three hops' 5 ms reserves and a 10 ms
      // minimum budget refuse below the edge.
      const fastFailing = { expectedAttemptMs: 2, random: () => 0, minAttemptMs: 25 };
      assert.deepEqual(decideRetry(input({ ...fastFailing, remainingMs: 25 })), { retry: false, reason: "deadline" });
      assert.deepEqual(decideRetry(input({ ...fastFailing, remainingMs: 26 })), { retry: true, delayMs: 0, reason: "retryable_code" });
      // The delay counts on top of the floor.
      assert.deepEqual(decideRetry(input({ ...fastFailing, pushbackMs: 10, remainingMs: 35 })), { retry: false, reason: "deadline" });
      assert.ok(decideRetry(input({ ...fastFailing, pushbackMs: 10, remainingMs: 36 })).retry);
      // Without a floor the same call is retried with 3 ms left.
      assert.ok(decideRetry(input({ ...fastFailing, minAttemptMs: undefined, remainingMs: 3 })).retry);
    });

    it("takes the expected attempt time when it is above the floor", () => {
      assert.deepEqual(decideRetry(input({ minAttemptMs: 25, remainingMs: 125 })), { retry: false, reason: "deadline" });
      assert.ok(decideRetry(input({ minAttemptMs: 25, remainingMs: 126 })).retry);
    });

    it("does not consult the budget", () => {
      const budget = countingBudget();
      decideRetry(input({ remainingMs: 10, budget }));
      assert.equal(budget.asked, 0);
    });
  });

  describe("budget", () => {
    it("is consulted last and refuses when exhausted", () => {
      const budget = countingBudget(false);
      assert.deepEqual(decideRetry(input({ budget })), { retry: false, reason: "budget_exhausted" });
      assert.equal(budget.asked, 1);
    });

    it("loses a token only for retries that happen (a real RetryBudget)", () => {
      const clock = new FakeClock();
      const budget = new RetryBudget({ percentCanRetry: 0.1, minRetriesPerSec: 0.2, ttlMs: 10_000, clock });
      assert.equal(budget.balance(), 2);
      decideRetry(input({ budget, idempotent: false }));
      decideRetry(input({ budget, attempt: 3 }));
      decideRetry(input({ budget, remainingMs: 1 }));
      decideRetry(input({ budget, error: new ConnectError("x", Code.NotFound) }));
      assert.equal(budget.balance(), 2);
      assert.ok(decideRetry(input({ budget })).retry);
      assert.ok(decideRetry(input({ budget })).retry);
      assert.deepEqual(decideRetry(input({ budget })), { retry: false, reason: "budget_exhausted" });
    });
  });

  it("refuses an attempt count below 1", () => {
    assert.throws(() => decideRetry(input({ attempt: 0 })), RangeError);
  });
});

describe("retry policies", () => {
  it("default: 3 attempts on UNAVAILABLE and RESOURCE_EXHAUSTED with 50 ms doubling to 1 s", () => {
    assert.deepEqual(defaultRetryPolicy, {
      maxAttempts: 3,
      retryableCodes: [Code.Unavailable, Code.ResourceExhausted],
      backoff: { initialMs: 50, multiplier: 2, maxMs: 1_000 },
    });
  });

  it("noRetryPolicy makes exactly one attempt", () => {
    assert.equal(noRetryPolicy.maxAttempts, 1);
    assert.deepEqual(noRetryPolicy.retryableCodes, []);
  });

  it("cannot be mutated by accident", () => {
    assert.ok(Object.isFrozen(defaultRetryPolicy));
    assert.ok(Object.isFrozen(defaultRetryPolicy.retryableCodes));
    assert.ok(Object.isFrozen(defaultRetryPolicy.backoff));
    assert.ok(Object.isFrozen(noRetryPolicy));
  });
});
