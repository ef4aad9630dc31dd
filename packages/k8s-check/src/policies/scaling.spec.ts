import { describe } from "node:test";
import type { IDeployment } from "kubernetes-models/apps/v1/Deployment";
import type { IHorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import type { IPodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { flags, passesValidPlatform } from "../testing/check.js";
import { find } from "../testing/fixture.js";
import { scaling } from "./scaling.js";

const hpa = (o: Parameters<typeof find>[0], name: string) => find<IHorizontalPodAutoscaler>(o, "HorizontalPodAutoscaler", name);

describe("policy: scaling", () => {
  passesValidPlatform(scaling);
  flags(scaling, "no PDB", /Deployment\/orders: needs exactly one PodDisruptionBudget \(has 0\)/, (o) =>
    o.splice(o.indexOf(find(o, "PodDisruptionBudget", "orders")), 1),
  );
  flags(scaling, "two HPAs", /Deployment\/gateway: needs exactly one HorizontalPodAutoscaler \(has 2\)/, (o) => {
    const copy = structuredClone(hpa(o, "gateway"));
    copy.metadata.name = "gateway-2";
    o.push(copy);
  });
  flags(scaling, "PDB that blocks every eviction", /PodDisruptionBudget\/checkout: must allow one eviction/, (o) => {
    const spec = find<IPodDisruptionBudget>(o, "PodDisruptionBudget", "checkout").spec;
    if (spec) {
      delete spec.maxUnavailable;
      spec.minAvailable = 2;
    }
  });
  flags(scaling, "HPA on memory only", /HorizontalPodAutoscaler\/orders: needs a CPU metric/, (o) => {
    const spec = hpa(o, "orders").spec;
    if (spec) spec.metrics = [{ type: "Resource", resource: { name: "memory", target: { type: "Utilization", averageUtilization: 80 } } }];
  });
  flags(scaling, "minReplicas above maxReplicas", /HorizontalPodAutoscaler\/gateway: minReplicas > maxReplicas/, (o) => {
    const spec = hpa(o, "gateway").spec;
    if (spec) spec.maxReplicas = 1;
  });
  flags(scaling, "replicas other than the HPA's minimum", /Deployment\/checkout: replicas \(5\) must equal its HPA's minReplicas \(2\)/, (o) => {
    const spec = find<IDeployment>(o, "Deployment", "checkout").spec;
    if (spec) spec.replicas = 5;
  });
});
