import { describe } from "node:test";
import type { IDeployment } from "kubernetes-models/apps/v1/Deployment";
import { flags, passesValidPlatform } from "../testing/check.js";
import { container, find } from "../testing/fixture.js";
import { securityContext } from "./security-context.js";

const sc = (o: Parameters<typeof container>[0], name: string) => {
  const c = container(o, name);
  c.securityContext ??= {};
  return c.securityContext;
};

describe("policy: security-context", () => {
  passesValidPlatform(securityContext);
  flags(securityContext, "runs as root", /orders.*runAsNonRoot must be true/, (o) => (sc(o, "orders").runAsNonRoot = false));
  flags(securityContext, "another user", /gateway.*runAsUser must be 1000/, (o) => (sc(o, "gateway").runAsUser = 0));
  flags(securityContext, "writable root filesystem", /gateway.*readOnlyRootFilesystem must be true/, (o) => (sc(o, "gateway").readOnlyRootFilesystem = false));
  flags(securityContext, "privilege escalation", /checkout.*allowPrivilegeEscalation must be false/, (o) => delete sc(o, "checkout").allowPrivilegeEscalation);
  flags(securityContext, "privileged", /orders.*must not be privileged/, (o) => (sc(o, "orders").privileged = true));
  flags(securityContext, "no capability drop", /checkout.*capabilities must drop ALL/, (o) => (sc(o, "checkout").capabilities = {}));
  flags(
    securityContext,
    "a capability added",
    /checkout.*capabilities must drop ALL and add none/,
    (o) => (sc(o, "checkout").capabilities = { drop: ["ALL"], add: ["NET_ADMIN"] }),
  );
  flags(securityContext, "no seccomp profile", /gateway.*seccompProfile must be RuntimeDefault/, (o) => {
    const pod = find<IDeployment>(o, "Deployment", "gateway").spec?.template.spec;
    if (pod?.securityContext) delete pod.securityContext.seccompProfile;
  });
  flags(securityContext, "no /tmp volume", /orders.*emptyDir at \/tmp/, (o) => (container(o, "orders").volumeMounts = []));
});
