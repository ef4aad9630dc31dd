import type { INetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { matches, ofKind, portRole } from "../manifests.js";
import { idOf } from "../objects.js";
import type { Policy } from "./policy.js";

/**
 * Selectors the checker cannot evaluate (matchExpressions) are violations
 * rather than guesses.
 */
export const networkPolicies: Policy = {
  name: "network-policies",
  rule: "Ingress is denied by default; the public service's RPC port is open to any source, every other RPC port only to the service's callers in the namespace, admin ports only to another namespace (monitoring), and no rule opens every port.",
  check(m) {
    const out: string[] = [];
    const { publicService, services } = m.facts;
    const policies = ofKind<INetworkPolicy>(m.objects, "NetworkPolicy");
    const ingressTyped = policies.filter((p) => (p.spec?.policyTypes ?? ["Ingress"]).includes("Ingress"));
    if (!ingressTyped.some((p) => Object.keys(p.spec?.podSelector ?? {}).length === 0 && (p.spec?.ingress ?? []).length === 0)) {
      out.push("NetworkPolicy: needs a default-deny-ingress policy (podSelector {}, no ingress rules)");
    }
    for (const p of policies) {
      const selectors = [p.spec?.podSelector, ...(p.spec?.ingress ?? []).flatMap((r) => (r.from ?? []).flatMap((f) => [f.podSelector, f.namespaceSelector]))];
      if (selectors.some((s) => (s?.matchExpressions ?? []).length > 0))
        out.push(`${idOf(p)}: matchExpressions are not supported by the checker; use matchLabels`);
    }
    for (const w of m.workloads) {
      const own = ingressTyped.filter((p) => matches(p.spec?.podSelector?.matchLabels, w.labels));
      if (own.length === 0) out.push(`Deployment/${w.name}: no NetworkPolicy selects its pods, so all ingress is allowed`);
      const callers = services[w.name]?.callers ?? [];
      const isPublic = w.name === publicService;
      const allowedCallers = new Set<string>();
      let openToAll = false;
      for (const p of own) {
        for (const rule of p.spec?.ingress ?? []) {
          const where = `${idOf(p)} (for ${w.name})`;
          if ((rule.ports ?? []).length === 0) {
            out.push(`${where}: a rule without ports opens every port, the admin port included`);
            continue;
          }
          const roles = (rule.ports ?? []).map((port) => portRole(w, port.port));
          for (const role of roles) if (role !== "rpc" && role !== "admin") out.push(`${where}: rule opens ${role}`);
          const from = rule.from ?? [];
          if (from.length === 0) {
            // Any source, from anywhere.
            if (!isPublic || roles.some((r) => r !== "rpc"))
              out.push(`${where}: opens ${roles.join(", ")} of ${w.name} to any source; only the ${publicService}'s RPC port is public`);
            else openToAll = true;
            continue;
          }
          for (const peer of from) {
            if (peer.ipBlock !== undefined || peer.namespaceSelector !== undefined) {
              // From outside the namespace: scraping the admin port, or the public service.
              const ok = roles.every((r) => r === "admin") || (isPublic && roles.every((r) => r === "rpc"));
              if (!ok) out.push(`${where}: opens ${roles.join(", ")} of ${w.name} to sources outside the namespace`);
              continue;
            }
            const source = peer.podSelector?.matchLabels?.["app.kubernetes.io/name"];
            if (roles.includes("admin")) out.push(`${where}: opens the admin port of ${w.name} to pods in the namespace`);
            if (source === undefined) out.push(`${where}: opens ${w.name} to every pod in the namespace`);
            else if (!isPublic && !callers.includes(source)) out.push(`${where}: lets ${source} call ${w.name}; its callers are ${callers.join(", ")}`);
            else if (roles.includes("rpc")) allowedCallers.add(source);
          }
        }
      }
      if (isPublic && !openToAll) out.push(`NetworkPolicy: the ${publicService}'s RPC port must be open to any source`);
      for (const c of callers) if (!allowedCallers.has(c)) out.push(`NetworkPolicy: ${c} cannot reach ${w.name}'s RPC port`);
    }
    return out;
  },
};
