import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FakeClock } from "./clock.js";
import { RetryBudget } from "./retry-budget.js";
import { seededRandom } from "./seeded-random.js";

function budget(clock: FakeClock, overrides: Partial<ConstructorParameters<typeof RetryBudget>[0]> = {}): RetryBudget {
  return new RetryBudget({ percentCanRetry: 0.1, minRetriesPerSec: 1, ttlMs: 10_000, clock, ...overrides });
}

interface Outcome {
  requests: number;
  attempts: number;
  retriesNeeded: number;
  retriesGranted: number;
}

/**
 * Plays `requests` user requests, one every `spacingMs`, each with up to
 * `maxAttempts` attempts; `fails(request, attempt)` says whether an attempt
 * fails. Every original request deposits; every retry asks the budget.
 */
function play(
  b: RetryBudget,
  clock: FakeClock,
  opts: { requests: number; spacingMs: number; maxAttempts?: number; fails: (request: number, attempt: number) => boolean },
): Outcome {
  const maxAttempts = opts.maxAttempts ?? 3;
  const out: Outcome = { requests: 0, attempts: 0, retriesNeeded: 0, retriesGranted: 0 };
  for (let r = 0; r < opts.requests; r++) {
    out.requests++;
    b.deposit();
    for (let attempt = 1; ; attempt++) {
      out.attempts++;
      if (!opts.fails(r, attempt) || attempt >= maxAttempts) break;
      out.retriesNeeded++;
      if (!b.tryWithdraw()) break;
      out.retriesGranted++;
    }
    clock.advance(opts.spacingMs);
  }
  return out;
}

describe("RetryBudget", () => {
  it("offers the floor (minRetriesPerSec x ttl) with no traffic at all", () => {
    const clock = new FakeClock();
    const b = budget(clock);
    assert.equal(b.balance(), 10);
    for (let i = 0; i < 10; i++) assert.equal(b.tryWithdraw(), true, `retry ${i + 1}`);
    assert.equal(b.tryWithdraw(), false);
    assert.equal(b.balance(), 0);
    assert.deepEqual(b.stats(), { deposits: 0, withdrawals: 10, exhausted: 1 });
  });

  it("needs and takes no retries with 0% failure, while the balance builds to ~10% of traffic", () => {
    const clock = new FakeClock();
    const b = budget(clock);
    const out = play(b, clock, { requests: 500, spacingMs: 10, fails: () => false });
    assert.equal(out.attempts, 500);
    assert.equal(out.retriesNeeded, 0);
    assert.equal(b.stats().withdrawals, 0);
    assert.equal(b.balance(), 50 + 10);
  });

  it("under 100% failure grants ~10% of the requests in a window plus the floor", () => {
    const clock = new FakeClock();
    const b = budget(clock);
    // 1000 requests inside one 10 s window.
    const out = play(b, clock, { requests: 1_000, spacingMs: 9, fails: () => true });
    assert.ok(out.retriesGranted <= 100 + 10, `granted ${out.retriesGranted}`);
    assert.ok(out.retriesGranted >= 100 + 10 - 2, `granted ${out.retriesGranted}`);
    // The dependency sees ~1.1 attempts per request, not 3.
    assert.ok(out.attempts / out.requests <= 1.11, `${out.attempts / out.requests} attempts per request`);
  });

  it("keeps attempts per request at about 1.1 through a long total outage", () => {
    const clock = new FakeClock();
    const b = budget(clock);
    // 100 rps for 2 minutes, everything fails.
    const out = play(b, clock, { requests: 12_000, spacingMs: 10, fails: () => true });
    const amplification = out.attempts / out.requests;
    // 10% earned plus 1 retry/s of floor (1% at 100 rps).
    assert.ok(amplification > 1.09 && amplification <= 1.111, `amplification ${amplification}`);
  });

  it("grants every needed retry under 10% failure", () => {
    const clock = new FakeClock();
    const b = budget(clock);
    // Every 10th request fails once; its retry succeeds. 100 rps for a minute.
    const out = play(b, clock, { requests: 6_000, spacingMs: 10, fails: (r, attempt) => r % 10 === 9 && attempt === 1 });
    assert.equal(out.retriesNeeded, 600);
    assert.equal(out.retriesGranted, 600);
    assert.equal(b.stats().exhausted, 0);
  });

  it("grants every needed retry under random failures below the budget", () => {
    const clock = new FakeClock();
    const b = budget(clock);
    const random = seededRandom(2024);
    // 7% of attempts fail independently, retries included.
    const out = play(b, clock, { requests: 6_000, spacingMs: 10, fails: () => random() < 0.07 });
    assert.ok(out.retriesNeeded > 300, `needed ${out.retriesNeeded}`);
    assert.equal(out.retriesGranted, out.retriesNeeded);
  });

  it("recovers its balance one ttl after an outage drained it", () => {
    const clock = new FakeClock();
    const b = budget(clock);
    play(b, clock, { requests: 500, spacingMs: 10, fails: () => true });
    assert.equal(b.balance(), 0);
    assert.equal(b.tryWithdraw(), false);
    clock.advance(10_000);
    // Deposits and withdrawals both expired: back to the floor.
    assert.equal(b.balance(), 10);
    play(b, clock, { requests: 500, spacingMs: 10, fails: () => false });
    assert.equal(b.balance(), 60);
  });

  it("does not bank a quiet period: old deposits expire after the ttl", () => {
    const clock = new FakeClock();
    const b = budget(clock);
    play(b, clock, { requests: 1_000, spacingMs: 1, fails: () => false });
    assert.equal(b.balance(), 110);
    clock.advance(10_000);
    assert.equal(b.balance(), 10);
  });

  it("with percentCanRetry 0 spends only the floor; with minRetriesPerSec 0 only what traffic earned", () => {
    const clock = new FakeClock();
    const floorOnly = budget(clock, { percentCanRetry: 0, minRetriesPerSec: 0.5 });
    for (let i = 0; i < 100; i++) floorOnly.deposit();
    assert.equal(floorOnly.balance(), 5);
    const earnedOnly = budget(clock, { minRetriesPerSec: 0 });
    assert.equal(earnedOnly.tryWithdraw(), false);
    for (let i = 0; i < 25; i++) earnedOnly.deposit();
    assert.equal(earnedOnly.balance(), 2);
    assert.equal(earnedOnly.tryWithdraw(), true);
    assert.equal(earnedOnly.tryWithdraw(), true);
    assert.equal(earnedOnly.tryWithdraw(), false);
  });

  it("refuses nonsensical settings", () => {
    const clock = new FakeClock();
    assert.throws(() => budget(clock, { percentCanRetry: -0.1 }), RangeError);
    assert.throws(() => budget(clock, { percentCanRetry: Number.NaN }), RangeError);
    assert.throws(() => budget(clock, { minRetriesPerSec: -1 }), RangeError);
    assert.throws(() => budget(clock, { ttlMs: 0 }), RangeError);
  });

  it("counts deposits, grants and refusals for the metrics", () => {
    const clock = new FakeClock(0);
    const b = new RetryBudget({ percentCanRetry: 0.5, minRetriesPerSec: 0, ttlMs: 10_000, clock });
    for (let i = 0; i < 4; i++) b.deposit();
    assert.deepEqual([b.tryWithdraw(), b.tryWithdraw(), b.tryWithdraw()], [true, true, false]);
    assert.deepEqual(b.stats(), { deposits: 4, withdrawals: 2, exhausted: 1 });
  });

  it("with percentCanRetry 0, requests earn nothing and only the reserve is spent", () => {
    const clock = new FakeClock(0);
    const b = new RetryBudget({ percentCanRetry: 0, minRetriesPerSec: 0.2, ttlMs: 10_000, clock });
    for (let i = 0; i < 1_000; i++) b.deposit();
    assert.equal(b.balance(), 2);
    assert.deepEqual([b.tryWithdraw(), b.tryWithdraw(), b.tryWithdraw()], [true, true, false]);
  });

  it("refuses settings outside their ranges, naming them", () => {
    const clock = new FakeClock(0);
    const make = (o: Partial<{ percentCanRetry: number; minRetriesPerSec: number; ttlMs: number }>) => () =>
      new RetryBudget({ percentCanRetry: 0.1, minRetriesPerSec: 1, ttlMs: 10_000, clock, ...o });
    assert.throws(make({ percentCanRetry: -0.1 }), /^RangeError: percentCanRetry must be within \[0, 1000\], got -0.1$/);
    assert.throws(make({ percentCanRetry: 1_001 }), /percentCanRetry/);
    assert.doesNotThrow(make({ percentCanRetry: 1_000 }));
    assert.throws(make({ minRetriesPerSec: Infinity }), /^RangeError: minRetriesPerSec must be a non-negative number, got Infinity$/);
    assert.throws(make({ ttlMs: 0 }), /^RangeError: ttlMs must be positive, got 0$/);
    assert.throws(make({ ttlMs: Infinity }), /ttlMs must be positive/);
  });
});
