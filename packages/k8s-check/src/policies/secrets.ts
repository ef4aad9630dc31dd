import type { K8sObject } from "../objects.js";
import { idOf } from "../objects.js";
import { ofKind } from "../manifests.js";
import type { Policy } from "./policy.js";

/** user:password@ in a URL. */
export const credentialInUrl = /:\/\/[^/\s:@]+:[^/\s@]+@/;

export const secrets: Policy = {
  name: "secrets",
  rule: "No Secret is part of the manifests (they are created out of band) and no ConfigMap holds a credential.",
  check(m) {
    const out: string[] = [];
    for (const s of ofKind<K8sObject>(m.objects, "Secret")) out.push(`${idOf(s)}: Secrets must not be part of the manifests; create them out of band`);
    for (const cm of m.configMaps.values()) {
      for (const [key, value] of Object.entries(cm.data ?? {})) {
        if (key === "DATABASE_URL" || credentialInUrl.test(value))
          out.push(`ConfigMap/${cm.metadata.name}: ${key} looks like a credential; use the ${m.facts.databaseSecret} Secret`);
      }
    }
    return out;
  },
};
