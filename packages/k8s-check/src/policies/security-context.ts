import { containerWhere } from "../manifests.js";
import { withContainer, type Policy } from "./policy.js";

export const securityContext: Policy = {
  name: "security-context",
  rule: "Non-root as the image's user, read-only root filesystem with an emptyDir at /tmp, no privilege escalation, not privileged, all capabilities dropped, RuntimeDefault seccomp.",
  check(m) {
    const out: string[] = [];
    for (const w of withContainer(m)) {
      const cw = containerWhere(w);
      // Container settings override the pod's.
      const sc = w.container.securityContext;
      const psc = w.pod.securityContext;
      if ((sc?.runAsNonRoot ?? psc?.runAsNonRoot) !== true) out.push(`${cw}: runAsNonRoot must be true`);
      if ((sc?.runAsUser ?? psc?.runAsUser) !== m.facts.runAsUser) out.push(`${cw}: runAsUser must be ${m.facts.runAsUser} (the image's node user)`);
      if (sc?.readOnlyRootFilesystem !== true) out.push(`${cw}: readOnlyRootFilesystem must be true`);
      if (sc?.allowPrivilegeEscalation !== false) out.push(`${cw}: allowPrivilegeEscalation must be false`);
      if (sc?.privileged === true) out.push(`${cw}: must not be privileged`);
      if (!sc?.capabilities?.drop?.includes("ALL") || (sc.capabilities.add ?? []).length > 0) out.push(`${cw}: capabilities must drop ALL and add none`);
      if ((sc?.seccompProfile ?? psc?.seccompProfile)?.type !== "RuntimeDefault") out.push(`${cw}: seccompProfile must be RuntimeDefault`);
      const tmp = w.container.volumeMounts?.find((v) => v.mountPath === "/tmp");
      if (tmp === undefined || w.pod.volumes?.find((v) => v.name === tmp.name)?.emptyDir === undefined) {
        out.push(`${cw}: needs an emptyDir at /tmp (the root filesystem is read-only)`);
      }
    }
    return out;
  },
};
