import { parseFaults, type Faults } from "@platform/resilience";
import type { EnvReader } from "../config/config.js";

/**
 * Whether this process lets anyone inject faults, read from its
 * environment. Off unless FAULT_INJECTION=enabled, and enabling it needs a
 * bearer token (FAULT_INJECTION_TOKEN) that every /admin/faults request must
 * present: fault injection can take a service down at will, so it is a lab
 * and test tool, never a default (docs/faults.md). docker-compose.yml and
 * deploy/ never enable it (test/repository.test.ts checks).
 */
export type FaultInjectionConfig =
  | { enabled: false }
  | {
      enabled: true;
      /** What /admin/faults requests must send as `Authorization: Bearer <token>`. */
      token: string;
      /** Faults in force from start (FAULTS, JSON); usually none. */
      faults: Faults;
    };

/** Shortest token accepted: a guessable token would make the switch decorative. */
export const minFaultTokenLength = 16;

export function readFaultInjectionConfig(r: EnvReader): FaultInjectionConfig {
  const mode = r.oneOf("FAULT_INJECTION", ["disabled", "enabled"] as const, "disabled");
  const faultsText = r.optionalString("FAULTS");
  if (mode === "disabled") {
    if (faultsText !== undefined)
      r.problems.push("FAULTS is set but fault injection is disabled; set FAULT_INJECTION=enabled (and FAULT_INJECTION_TOKEN) to inject faults");
    return { enabled: false };
  }
  const token = r.optionalString("FAULT_INJECTION_TOKEN");
  if (token === undefined) {
    r.problems.push("FAULT_INJECTION_TOKEN is required when FAULT_INJECTION=enabled: /admin/faults requests must authenticate with it");
  } else if (token.length < minFaultTokenLength) {
    r.problems.push(`FAULT_INJECTION_TOKEN must be at least ${minFaultTokenLength} characters, got ${token.length}`);
  }
  let faults: Faults = {};
  if (faultsText !== undefined) {
    try {
      faults = parseFaults(faultsText);
    } catch (e) {
      r.problems.push(`FAULTS is not a valid faults document: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  return { enabled: true, token: token ?? "", faults };
}
