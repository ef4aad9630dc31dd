import { analyze, type RunResult } from "./analyze.js";
import type { Profile } from "./platform/lab-platform.js";
import { runScenario, type RunOptions } from "./run-scenario.js";
import type { Scenario } from "./scenarios.js";

export interface StormOptions {
  scenarios: readonly Scenario[];
  profiles: readonly Profile[];
  quick: boolean;
  clientTimeoutMs: number;
  /** Fixed reference capacity (req/s); otherwise the first run's measurement is used for every run. */
  capacity?: number;
  failover: RunOptions["failover"];
  /** Measure capacity in every run for the report (else only in the first). */
  measureEachRun: boolean;
  log(line: string): void;
}

/**
 * Runs every scenario for every profile, each on a fresh platform, one
 * after the other. All runs offer the same rates: fractions of one
 * reference capacity, so that the profiles differ in nothing but the profile.
 */
export async function runStorm(opts: StormOptions): Promise<RunResult[]> {
  const results: RunResult[] = [];
  let reference = opts.capacity;
  for (const scenario of opts.scenarios) {
    for (const profile of opts.profiles) {
      opts.log(`${scenario.name} / ${profile}${opts.quick ? " (quick)" : ""}`);
      const raw = await runScenario(scenario, profile, {
        quick: opts.quick,
        clientTimeoutMs: opts.clientTimeoutMs,
        ...(reference !== undefined ? { referenceCapacity: reference } : {}),
        measureCapacity: opts.measureEachRun || reference === undefined,
        failover: opts.failover,
        log: opts.log,
      });
      reference ??= raw.capacity.referencePerSec;
      results.push(analyze(raw));
    }
  }
  return results;
}
