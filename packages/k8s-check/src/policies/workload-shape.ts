import { matches } from "../manifests.js";
import type { Policy } from "./policy.js";

export const workloadShape: Policy = {
  name: "workload-shape",
  rule: "One Deployment per platform service, none other, each with one container and pods labelled with its name and the platform, selected by its own selector.",
  check(m) {
    const out: string[] = [];
    const { partOf, services } = m.facts;
    for (const w of m.workloads) {
      const where = `Deployment/${w.name}`;
      if (w.labels["app.kubernetes.io/name"] !== w.name || w.labels["app.kubernetes.io/part-of"] !== partOf) {
        out.push(`${where}: pods need labels app.kubernetes.io/name=${w.name} and app.kubernetes.io/part-of=${partOf}`);
      }
      if (!matches(w.deployment.spec?.selector.matchLabels, w.labels)) out.push(`${where}: selector does not match the pod labels`);
      if (!(w.name in services)) out.push(`${where}: not a platform service (${Object.keys(services).join(", ")})`);
      if ((w.pod?.containers ?? []).length !== 1) out.push(`${where}: expected exactly one container`);
    }
    for (const name of Object.keys(services)) {
      if (!m.workloads.some((w) => w.name === name)) out.push(`Deployment/${name}: missing`);
    }
    return out;
  },
};
