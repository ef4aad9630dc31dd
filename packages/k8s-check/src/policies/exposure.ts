import type { IIngress } from "kubernetes-models/networking.k8s.io/v1/Ingress";
import type { IService } from "kubernetes-models/v1/Service";
import { matches, ofKind, portRole, type Manifests, type Workload } from "../manifests.js";
import { idOf, type K8sObject } from "../objects.js";
import type { Policy } from "./policy.js";

/** The Deployments a Service selects (none for a Service without a selector). */
export function selectedBy(m: Manifests, s: IService): Workload[] {
  return m.workloads.filter((w) => Object.keys(s.spec?.selector ?? {}).length > 0 && matches(s.spec?.selector, w.labels));
}

export const exposure: Policy = {
  name: "exposure",
  rule: "Services publish only RPC ports and each selects a Deployment; only the public service's RPC port leaves the cluster (LoadBalancer, NodePort, Ingress); the admin ports (/metrics, /admin) are never published.",
  check(m) {
    const out: string[] = [];
    const publicService = m.facts.publicService;
    const services = ofKind<IService>(m.objects, "Service");
    const exposed = (s: IService & K8sObject, how: string) => {
      const targets = selectedBy(m, s);
      if (targets.length !== 1 || targets[0]?.name !== publicService) {
        out.push(`${idOf(s)}: ${how} exposes ${targets.map((t) => t.name).join(", ") || "nothing"}; only the ${publicService} may be exposed`);
      }
      for (const t of targets) {
        for (const p of s.spec?.ports ?? []) {
          const role = portRole(t, p.targetPort ?? p.port);
          if (role !== "rpc") out.push(`${idOf(s)}: ${how} port ${p.port} targets the ${role} port of ${t.name}; only the RPC port may be exposed`);
        }
      }
    };
    for (const s of services) {
      const type = s.spec?.type ?? "ClusterIP";
      if (type === "ExternalName" || (s.spec?.externalIPs ?? []).length > 0) out.push(`${idOf(s)}: ExternalName and externalIPs are not used by the platform`);
      if (type === "LoadBalancer" || type === "NodePort") exposed(s, type);
      const targets = selectedBy(m, s);
      if (targets.length === 0) out.push(`${idOf(s)}: selects no Deployment`);
      for (const t of targets) {
        for (const p of s.spec?.ports ?? []) {
          const role = portRole(t, p.targetPort ?? p.port);
          // The admin port is scraped from the pods, never published.
          if (role !== "rpc") out.push(`${idOf(s)}: port ${p.port} targets the ${role} port of ${t.name}; Services publish only the RPC port`);
        }
      }
    }
    for (const ing of ofKind<IIngress>(m.objects, "Ingress")) {
      const backends = [ing.spec?.defaultBackend, ...(ing.spec?.rules ?? []).flatMap((r) => r.http?.paths.map((p) => p.backend) ?? [])];
      for (const b of backends) {
        if (b === undefined) continue;
        const s = services.find((x) => x.metadata.name === b.service?.name);
        if (s === undefined) {
          out.push(`${idOf(ing)}: backend ${b.service?.name ?? "(resource)"} is not a rendered Service`);
          continue;
        }
        const port = s.spec?.ports?.find((p) => p.name === b.service?.port?.name || p.port === b.service?.port?.number);
        exposed({ ...s, spec: { ...s.spec, ports: port ? [port] : [] } }, "Ingress");
        if (port === undefined) out.push(`${idOf(ing)}: backend port is not a port of Service/${s.metadata.name}`);
      }
    }
    return out;
  },
};
