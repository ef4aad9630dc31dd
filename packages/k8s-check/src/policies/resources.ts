import { containerWhere } from "../manifests.js";
import { withContainer, type Policy } from "./policy.js";

export const resources: Policy = {
  name: "resources",
  rule: "Every container requests and limits both CPU and memory.",
  check(m) {
    const out: string[] = [];
    for (const w of withContainer(m)) {
      const r = w.container.resources;
      for (const [kind, values] of [
        ["requests", r?.requests],
        ["limits", r?.limits],
      ] as const) {
        for (const res of ["cpu", "memory"]) if (values?.[res] === undefined) out.push(`${containerWhere(w)}: resources.${kind}.${res} is required`);
      }
    }
    return out;
  },
};
