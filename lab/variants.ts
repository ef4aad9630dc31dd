import type { Profile } from "./platform/lab-platform.js";

/**
 * What runs: a profile, or the platform with one mechanism switched off
 * through its own configuration (the shipped defaults otherwise). Each
 * switch is the setting an operator would use, so the ablation measures
 * the mechanism as it ships, not a lab-only code path.
 */
export interface Variant {
  /** "naive", "platform", or "platform-no-<mechanism>". */
  name: string;
  profile: Profile;
  /** Extra environment for every service. */
  env: Record<string, string>;
  /** For the ablation table: which mechanism is off. */
  mechanismOff?: Mechanism;
}

export type Mechanism = "breakers" | "retry budget" | "bulkheads" | "admission and shedding" | "intake controller" | "deadline propagation";

/** Bulkheads off: a fixed limit far above any load, and a queue to match, on every hop's every dependency. */
const noBulkheads: Record<string, string> = Object.fromEntries(
  ["CHECKOUT", "ORDERS", "PRICING"].flatMap((d) => [
    [`${d}_LIMIT`, "fixed"],
    [`${d}_MAX_CONCURRENT`, "10000"],
    [`${d}_MIN_CONCURRENT`, "10000"],
    [`${d}_MAX_QUEUE`, "100000"],
  ]),
);

export const switches: Record<Exclude<Mechanism, "deadline propagation">, Record<string, string>> = {
  // A breaker opens only after BREAKER_VOLUME_THRESHOLD calls in its window: never, at this value.
  breakers: { BREAKER_VOLUME_THRESHOLD: "100000" },
  // Every request earns a whole retry, and a reserve of 10 000 retries (1000/s over the 10 s window) is always there.
  "retry budget": { RETRY_BUDGET_PERCENT: "1", RETRY_BUDGET_MIN_PER_SEC: "1000" },
  bulkheads: noBulkheads,
  // Admission control admits everything at once and queues without bound.
  "admission and shedding": { ADMISSION_MAX_CONCURRENT: "100000", ADMISSION_MAX_QUEUE: "1000000", ADMISSION_MAX_QUEUE_WAIT_MS: "600000" },
  "intake controller": { INTAKE_ENABLED: "false" },
};

export const naive: Variant = { name: "naive", profile: "naive", env: {} };
export const platform: Variant = { name: "platform", profile: "platform", env: {} };
/** The platform with breakers off: its retry budget measured alone (full outage). */
export const platformNoBreakers: Variant = { name: "platform-no-breakers", profile: "platform", env: switches.breakers, mechanismOff: "breakers" };

export function without(mechanism: Exclude<Mechanism, "deadline propagation">, base: Variant = platform): Variant {
  const slug = mechanism.replace(/ and .*/, "").replace(/ /g, "-");
  return {
    name: base === platform ? `platform-no-${slug}` : `${base.name}-no-${slug}`,
    profile: "platform",
    env: { ...base.env, ...switches[mechanism] },
    mechanismOff: mechanism,
  };
}

/**
 * The ablation: for each mechanism, the scenario where it matters, the
 * variant it is compared with, and the number that should get worse.
 * Deadline propagation has no switch in the product (turning it off needs
 * a code change), so it is listed without a run.
 */
export interface Ablation {
  mechanism: Mechanism;
  scenario: string;
  baseline: Variant;
  ablated?: Variant;
  metric: string;
}

export const ablations: readonly Ablation[] = [
  {
    mechanism: "retry budget",
    scenario: "full-outage",
    baseline: platformNoBreakers,
    ablated: without("retry budget", platformNoBreakers),
    metric: "pricing-db attempts per request",
  },
  { mechanism: "breakers", scenario: "full-outage", baseline: platform, ablated: platformNoBreakers, metric: "pricing-db attempts per request" },
  {
    mechanism: "bulkheads",
    scenario: "slow-dependency",
    baseline: platform,
    ablated: without("bulkheads"),
    metric: "GetOrder served / sent during the trigger",
  },
  {
    mechanism: "admission and shedding",
    scenario: "overload",
    baseline: platform,
    ablated: without("admission and shedding"),
    metric: "goodput during the trigger / capacity",
  },
  {
    mechanism: "intake controller",
    scenario: "metastable",
    baseline: platform,
    ablated: without("intake controller"),
    metric: "goodput after the spike / before it",
  },
  { mechanism: "deadline propagation", scenario: "slow-query", baseline: platform, metric: "transactions that ended after their user gave up" },
];
