import assert from "node:assert/strict";
import type { RunResult } from "./analyze.js";

/** The run of `scenario` by `variant` among `results`; fails (an assertion) naming both when there is none. */
export function resultOf(results: readonly RunResult[], scenario: string, variant: string): RunResult {
  const r = results.find((x) => x.scenario === scenario && x.variant === variant);
  assert.ok(r, `no result for ${scenario}/${variant}`);
  return r;
}

/** The runs' own warnings (unhealthy baseline, crashed service), as a suffix for a failure message ("" when none). */
export function warningsOf(...runs: RunResult[]): string {
  const w = runs.flatMap((r) => r.warnings.map((x) => `${r.scenario}/${r.variant}: ${x}`));
  return w.length === 0 ? "" : ` [${w.join("; ")}]`;
}
