import type { Code } from "@connectrpc/connect";
import { IntakeController, signalsOverload, systemClock, type IntakeControllerOptions } from "@platform/resilience";
import { intakeMetrics } from "../observability/metrics.js";
import type { EnvReader } from "../config/config.js";
import { readBody, sendJson, type HttpEndpoint } from "../server/http-endpoints.js";
import type { Logger } from "../observability/logger.js";

export interface IntakeConfig {
  enabled: boolean;
  windowMs: number;
  minVolume: number;
  minSuccessRate: number;
  cutFraction: number;
  stepIntervalMs: number;
  stepFraction: number;
}

/** INTAKE_* variables; the edge reads them (see README "Overload"). */
export function readIntakeConfig(r: EnvReader): IntakeConfig {
  return {
    enabled: r.boolean("INTAKE_ENABLED", true),
    windowMs: r.int("INTAKE_WINDOW_MS", 5_000, { min: 500, max: 600_000 }),
    minVolume: r.int("INTAKE_MIN_VOLUME", 50, { min: 1, max: 1_000_000 }),
    minSuccessRate: r.number("INTAKE_MIN_SUCCESS_RATE", 0.5, { min: 0, max: 1 }),
    cutFraction: r.number("INTAKE_CUT_FRACTION", 0.2, { min: 0.01, max: 1 }),
    stepIntervalMs: r.int("INTAKE_STEP_MS", 2_000, { min: 100, max: 600_000 }),
    stepFraction: r.number("INTAKE_STEP_FRACTION", 0.1, { min: 0.01, max: 1 }),
  };
}

/** The controller's settings at the edge (its specs run with these too: intake.spec.ts). */
export function intakeControllerOptions(config: IntakeConfig): Omit<IntakeControllerOptions, "clock"> {
  return {
    windowMs: config.windowMs,
    minVolume: config.minVolume,
    minSuccessRate: config.minSuccessRate,
    cutFraction: config.cutFraction,
    stepIntervalMs: config.stepIntervalMs,
    stepFraction: config.stepFraction,
  };
}

export interface Intake {
  controller: IntakeController;
  /** Feeds one finished request's outcome ("ok" or its code). */
  record(code: Code | "ok", durationMs: number): void;
  endpoints: Record<string, HttpEndpoint>;
}

/**
 * The edge's intake controller (metastable recovery): when goodput
 * collapses it cuts intake to a safe share, then readmits traffic in steps
 * while health holds, so retries and backlog cannot keep an overloaded
 * system above capacity after the trigger has gone. GET/PUT /admin/intake
 * on the operator port reads it or drives it by hand.
 */
export function createIntake(config: IntakeConfig, logger: Logger): Intake {
  const { fraction, state, transitions } = intakeMetrics();
  const show = (s: string, f: number) => {
    fraction.set(f);
    for (const name of ["normal", "cut", "recovering", "manual"]) state.set({ state: name }, name === s ? 1 : 0);
  };
  const controller = new IntakeController({
    clock: systemClock,
    ...intakeControllerOptions(config),
    onTransition(t) {
      transitions.inc({ from: t.from, to: t.to, reason: t.reason });
      show(t.to, t.admitFraction);
      logger.warn({ from: t.from, to: t.to, admitFraction: t.admitFraction, reason: t.reason }, "intake changed");
    },
  });
  show("normal", 1);
  return {
    controller,
    record(code, durationMs) {
      // Only shedding (RESOURCE_EXHAUSTED, the edge's own queue refusals
      // included) reads as "over capacity": a slow or dead dependency is its
      // breaker's and bulkhead's business (see `signalsOverload`, invariant 6).
      controller.record(!signalsOverload(code), durationMs);
    },
    endpoints: {
      "GET /admin/intake": (_req, res) => sendJson(res, 200, controller.snapshot()),
      "PUT /admin/intake": async (req, res) => {
        let body: { fraction?: unknown };
        try {
          body = JSON.parse(await readBody(req)) as { fraction?: unknown };
        } catch {
          return sendJson(res, 400, { error: 'body must be JSON: {"fraction": 0..1} or {"fraction": null} to return to automatic' });
        }
        const f = body.fraction;
        if (f !== null && (typeof f !== "number" || !(f >= 0 && f <= 1))) {
          return sendJson(res, 400, { error: "fraction must be a number from 0 to 1, or null" });
        }
        controller.setManual(f);
        sendJson(res, 200, controller.snapshot());
      },
    },
  };
}
