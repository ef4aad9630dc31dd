import type { IHorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import type { IPodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { matches, ofKind, type Manifests, type Workload } from "../manifests.js";
import type { K8sObject } from "../objects.js";
import type { Policy } from "./policy.js";

/** The HorizontalPodAutoscalers that scale a Deployment. */
export function hpasOf(m: Manifests, w: Workload): (IHorizontalPodAutoscaler & K8sObject)[] {
  return ofKind<IHorizontalPodAutoscaler>(m.objects, "HorizontalPodAutoscaler").filter(
    (h) => h.spec?.scaleTargetRef.kind === "Deployment" && h.spec.scaleTargetRef.name === w.name,
  );
}

export const scaling: Policy = {
  name: "scaling",
  rule: "One HorizontalPodAutoscaler per Deployment, on CPU, whose minReplicas the Deployment's replicas repeat, and one PodDisruptionBudget that still allows an eviction at that count.",
  check(m) {
    const out: string[] = [];
    const pdbs = ofKind<IPodDisruptionBudget>(m.objects, "PodDisruptionBudget");
    for (const w of m.workloads) {
      const where = `Deployment/${w.name}`;
      const own = hpasOf(m, w);
      const hpa = own[0];
      if (own.length !== 1 || hpa?.spec === undefined) {
        out.push(`${where}: needs exactly one HorizontalPodAutoscaler (has ${own.length})`);
        continue;
      }
      const min = hpa.spec.minReplicas ?? 1;
      if (!hpa.spec.metrics?.some((x) => x.type === "Resource" && x.resource?.name === "cpu"))
        out.push(`HorizontalPodAutoscaler/${hpa.metadata.name}: needs a CPU metric`);
      if (min > hpa.spec.maxReplicas) out.push(`HorizontalPodAutoscaler/${hpa.metadata.name}: minReplicas > maxReplicas`);
      // kubectl apply resets replicas to this count; the HPA scales up again from there (docs/scaling.md).
      if (w.deployment.spec?.replicas !== min) out.push(`${where}: replicas (${w.deployment.spec?.replicas}) must equal its HPA's minReplicas (${min})`);
      const ownPdbs = pdbs.filter((p) => matches(p.spec?.selector?.matchLabels, w.labels) && Object.keys(p.spec?.selector?.matchLabels ?? {}).length > 0);
      const pdb = ownPdbs[0];
      if (ownPdbs.length !== 1 || pdb?.spec === undefined) {
        out.push(`${where}: needs exactly one PodDisruptionBudget (has ${ownPdbs.length})`);
        continue;
      }
      const { minAvailable, maxUnavailable } = pdb.spec;
      const blocks = typeof minAvailable === "number" ? minAvailable >= min : typeof maxUnavailable === "number" ? maxUnavailable < 1 : true;
      if (blocks)
        out.push(
          `PodDisruptionBudget/${pdb.metadata.name}: must allow one eviction at ${min} replicas (use integer minAvailable < ${min} or maxUnavailable >= 1)`,
        );
    }
    return out;
  },
};
