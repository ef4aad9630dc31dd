import type { PlatformFacts } from "../facts.js";
import { readManifests } from "../manifests.js";
import type { K8sObject } from "../objects.js";
import { callGraph } from "./call-graph.js";
import { databaseConnections } from "./database-connections.js";
import { environment } from "./environment.js";
import { exposure } from "./exposure.js";
import { image } from "./image.js";
import { metrics } from "./metrics.js";
import { networkPolicies } from "./network-policies.js";
import type { Policy } from "./policy.js";
import { probes } from "./probes.js";
import { resources } from "./resources.js";
import { scaling } from "./scaling.js";
import { secrets } from "./secrets.js";
import { securityContext } from "./security-context.js";
import { shutdown } from "./shutdown.js";
import { workloadShape } from "./workload-shape.js";

export type { Policy } from "./policy.js";

/** Every policy, in the order their messages are reported. */
export const policies: Policy[] = [
  secrets,
  workloadShape,
  environment,
  probes,
  resources,
  securityContext,
  shutdown,
  image,
  metrics,
  scaling,
  databaseConnections,
  exposure,
  callGraph,
  networkPolicies,
];

/**
 * Every broken rule as a readable message; empty when the manifests follow
 * them all. The objects are assumed schema-valid (checked separately).
 */
export function policyViolations(objects: K8sObject[], facts: PlatformFacts, only: Policy[] = policies): string[] {
  const m = readManifests(objects, facts);
  return only.flatMap((p) => p.check(m));
}
