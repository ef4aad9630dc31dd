/**
 * The intake controller with the settings the edge ships (readIntakeConfig
 * with no INTAKE_* variable set), not the controller's own defaults: window,
 * minimum volume and step interval differ (resilience's
 * intake-controller.spec.ts covers the controller with its own). Every
 * number below comes from that configuration, so these specs follow it.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FakeClock, IntakeController, seededRandom } from "@platform/resilience";
import { readEnv } from "../config/config.js";
import { intakeControllerOptions, readIntakeConfig } from "./intake.js";

const shipped = readEnv({}, readIntakeConfig);

function setup() {
  const clock = new FakeClock(50_000);
  const ctl = new IntakeController({ clock, random: seededRandom(7), ...intakeControllerOptions(shipped) });
  const record = (success: boolean, n: number, latencyMs = 10) => {
    for (let i = 0; i < n; i++) ctl.record(success, latencyMs);
  };
  const state = () => [ctl.snapshot().state, Number(ctl.snapshot().admitFraction.toFixed(6))] as const;
  return {
    clock,
    ctl,
    ok: (n: number, latencyMs?: number) => record(true, n, latencyMs),
    fail: (n: number, latencyMs?: number) => record(false, n, latencyMs),
    state,
  };
}

describe("the edge's intake controller, as shipped", () => {
  it("is on, and its settings are the ones documented (README 'Overload')", () => {
    assert.deepEqual(shipped, {
      enabled: true,
      windowMs: 5_000,
      minVolume: 50,
      minSuccessRate: 0.5,
      cutFraction: 0.2,
      stepIntervalMs: 2_000,
      stepFraction: 0.1,
    });
  });

  it("does not judge health below the minimum volume, and cuts to the cut fraction once it has it", () => {
    const { fail, state } = setup();
    fail(shipped.minVolume - 1);
    assert.deepEqual(state(), ["normal", 1]);
    fail(1);
    assert.deepEqual(state(), ["cut", shipped.cutFraction]);
  });

  it("judges health over its window: outcomes older than the window no longer count", () => {
    const { clock, ok, fail, state } = setup();
    const half = shipped.minVolume / 2;
    ok(half);
    fail(half); // exactly the minimum success rate: not below it
    assert.deepEqual(state(), ["normal", 1]);
    clock.advance(shipped.windowMs);
    fail(half); // the earlier outcomes have left: below the minimum volume again
    assert.deepEqual(state(), ["normal", 1]);
  });

  it("cuts when the success rate drops below the minimum, to the share still served", () => {
    const { ok, fail, state } = setup();
    const half = shipped.minVolume / 2;
    ok(half);
    fail(half + 1);
    const [s, fraction] = state();
    assert.equal(s, "cut");
    assert.ok(Math.abs(fraction - half / (2 * half + 1)) < 0.01, `cut to ${fraction}`);
  });

  it("readmits one step per healthy step interval, and is back to normal after (1 - cut) / step intervals", () => {
    const { clock, ok, fail, state } = setup();
    fail(shipped.minVolume);
    const steps = Math.round((1 - shipped.cutFraction) / shipped.stepFraction);
    const fractions: number[] = [];
    for (let i = 0; i < steps; i++) {
      clock.advance(shipped.stepIntervalMs - 1);
      ok(shipped.minVolume);
      assert.equal(state()[1], fractions.at(-1) ?? shipped.cutFraction, "no step before a full interval");
      clock.advance(1);
      fractions.push(state()[1]);
    }
    const expected = Array.from({ length: steps }, (_, i) => Number(Math.min(1, shipped.cutFraction + (i + 1) * shipped.stepFraction).toFixed(6)));
    assert.deepEqual(fractions, expected);
    assert.deepEqual(state(), ["normal", 1]);
  });

  it("halves the fraction on renewed trouble while recovering, and restarts the step interval", () => {
    const { clock, ok, fail, state } = setup();
    fail(shipped.minVolume);
    clock.advance(shipped.stepIntervalMs);
    ok(5);
    const recovering = shipped.cutFraction + shipped.stepFraction;
    assert.deepEqual(state(), ["recovering", Number(recovering.toFixed(6))]);
    clock.advance(100);
    fail(shipped.minVolume);
    assert.deepEqual(state(), ["cut", Number((recovering / 2).toFixed(6))]);
    clock.advance(shipped.stepIntervalMs - 1);
    assert.equal(state()[0], "cut", "the interval restarted at the renewed trouble");
    clock.advance(1);
    assert.deepEqual(state(), ["recovering", Number((recovering / 2 + shipped.stepFraction).toFixed(6))]);
  });

  it("ignores outcomes of requests that started before the cut (the overload's tail)", () => {
    const { clock, fail, state } = setup();
    fail(shipped.minVolume);
    clock.advance(1_000);
    fail(2 * shipped.minVolume, 1_500);
    assert.deepEqual(state(), ["cut", shipped.cutFraction]);
  });
});
