import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { backoffCapMs, backoffDelayMs } from "./backoff.js";
import { seededRandom } from "./seeded-random.js";

const policy = { initialMs: 50, multiplier: 2, maxMs: 1_000 };

describe("backoffCapMs", () => {
  it("grows exponentially from initialMs up to maxMs", () => {
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6, 7].map((n) => backoffCapMs(n, policy)),
      [50, 100, 200, 400, 800, 1_000, 1_000],
    );
  });

  it("is monotone and never exceeds maxMs, even for absurd retry numbers", () => {
    let previous = 0;
    for (let n = 1; n <= 2_000; n++) {
      const cap = backoffCapMs(n, policy);
      assert.ok(cap >= previous, `cap fell at retry ${n}`);
      assert.ok(cap <= policy.maxMs);
      previous = cap;
    }
    assert.equal(backoffCapMs(2_000, policy), 1_000);
  });

  it("refuses retry numbers below 1", () => {
    assert.throws(() => backoffCapMs(0, policy), RangeError);
    assert.throws(() => backoffCapMs(1.5, policy), RangeError);
  });
});

describe("backoffDelayMs", () => {
  it("is random() times the cap (full jitter)", () => {
    assert.equal(
      backoffDelayMs(3, policy, () => 0),
      0,
    );
    assert.equal(
      backoffDelayMs(3, policy, () => 0.5),
      100,
    );
    assert.equal(
      backoffDelayMs(3, policy, () => 0.25),
      50,
    );
  });

  it("stays within [0, cap) for many seeds", () => {
    for (let seed = 1; seed <= 200; seed++) {
      const random = seededRandom(seed);
      for (let n = 1; n <= 8; n++) {
        const d = backoffDelayMs(n, policy, random);
        assert.ok(d >= 0 && d < backoffCapMs(n, policy), `seed ${seed} retry ${n}: ${d}`);
      }
    }
  });

  it("averages about half the cap at each step", () => {
    const random = seededRandom(42);
    const samples = 20_000;
    for (let n = 1; n <= 7; n++) {
      let sum = 0;
      for (let i = 0; i < samples; i++) sum += backoffDelayMs(n, policy, random);
      const mean = sum / samples;
      const half = backoffCapMs(n, policy) / 2;
      // Uniform on [0, cap): sd of the mean is cap/sqrt(12 * samples) ~ 0.2% of cap.
      assert.ok(Math.abs(mean - half) < half * 0.03, `retry ${n}: mean ${mean} vs ${half}`);
    }
  });

  it("spreads retries instead of synchronising them", () => {
    const random = seededRandom(7);
    const delays = new Set<number>();
    for (let i = 0; i < 100; i++) delays.add(Math.floor(backoffDelayMs(4, policy, random)));
    assert.ok(delays.size > 80, `only ${delays.size} distinct delays out of 100`);
  });
});
