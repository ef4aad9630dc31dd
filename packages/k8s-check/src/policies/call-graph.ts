import type { IService } from "kubernetes-models/v1/Service";
import { ofKind, portRole, type Manifests } from "../manifests.js";
import type { Policy } from "./policy.js";
import { selectedBy } from "./exposure.js";

/**
 * Who calls whom according to the manifests: each *_URL setting (but
 * DATABASE_URL) must name a headless Service's port (`clusterIP: None`: one
 * A record per ready pod) that reaches a platform service's RPC port. The
 * caller's dependency client balances per call over what the name resolves
 * to; through a ClusterIP Service it would see one address, and the
 * connection, not the call, would be what is balanced. Problems go to `out`.
 */
export function callersFromUrls(m: Manifests, out: string[]): Map<string, Set<string>> {
  const services = ofKind<IService>(m.objects, "Service");
  const callers = new Map<string, Set<string>>(Object.keys(m.facts.services).map((n) => [n, new Set()]));
  for (const w of m.workloads) {
    for (const [v, value] of w.env) {
      if (!v.endsWith("_URL") || v === "DATABASE_URL") continue;
      if (!("value" in value)) {
        out.push(`Deployment/${w.name}: ${v} must be a literal URL`);
        continue;
      }
      let url: URL;
      try {
        url = new URL(value.value);
      } catch {
        out.push(`Deployment/${w.name}: ${v}=${value.value} is not a URL`);
        continue;
      }
      const s = services.find((x) => x.metadata.name === url.hostname && (x.spec?.type ?? "ClusterIP") === "ClusterIP");
      const port = s?.spec?.ports?.find((p) => p.port === Number(url.port || 80));
      const callee = s ? selectedBy(m, s)[0] : undefined;
      if (s === undefined || port === undefined || callee === undefined || portRole(callee, port.targetPort ?? port.port) !== "rpc") {
        out.push(`Deployment/${w.name}: ${v}=${value.value} does not reach a platform service's RPC port through a headless Service`);
        continue;
      }
      if (s.spec?.clusterIP !== "None") {
        out.push(
          `Deployment/${w.name}: ${v}=${value.value} names Service/${s.metadata.name}, which has a cluster IP: calls would be balanced per connection, not per call (name a headless Service, clusterIP: None)`,
        );
      }
      callers.get(callee.name)?.add(w.name);
    }
  }
  return callers;
}

export const callGraph: Policy = {
  name: "call-graph",
  rule: "The *_URL settings reach RPC ports through headless Services (balanced per call by the caller), and who calls whom is exactly the platform's call graph.",
  check(m) {
    const out: string[] = [];
    const callers = callersFromUrls(m, out);
    for (const [callee, { callers: expected }] of Object.entries(m.facts.services)) {
      const actual = [...(callers.get(callee) ?? [])].sort();
      if (actual.join() !== [...expected].sort().join())
        out.push(`call graph: ${callee} is called by [${actual.join(", ")}], expected [${expected.join(", ")}]`);
    }
    return out;
  },
};
