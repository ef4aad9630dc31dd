import { describe } from "node:test";
import type { IDeployment } from "kubernetes-models/apps/v1/Deployment";
import type { IConfigMap } from "kubernetes-models/v1/ConfigMap";
import { flags, passesValidPlatform } from "../testing/check.js";
import { container, find } from "../testing/fixture.js";
import { shutdown } from "./shutdown.js";

describe("policy: shutdown", () => {
  passesValidPlatform(shutdown);
  flags(shutdown, "grace period shorter than the drain", /Deployment\/gateway: terminationGracePeriodSeconds \(10\) must exceed/, (o) => {
    const spec = find<IDeployment>(o, "Deployment", "gateway").spec?.template.spec;
    if (spec) spec.terminationGracePeriodSeconds = 10;
  });
  flags(
    shutdown,
    "drain raised in the ConfigMap past the grace period",
    /Deployment\/orders: terminationGracePeriodSeconds \(30\) must exceed preStop sleep \(5 s\) \+ DRAIN_TIMEOUT_MS \(60 s\)/,
    (o) => {
      const cm = find<IConfigMap>(o, "ConfigMap", "platform-common");
      cm.data = { ...cm.data, DRAIN_TIMEOUT_MS: "60000" };
    },
  );
  flags(shutdown, "no preStop sleep", /checkout.*preStop sleep/, (o) => delete container(o, "checkout").lifecycle);
  flags(shutdown, "a drain that is not a number", /gateway.*DRAIN_TIMEOUT_MS must be a literal number/, (o) =>
    container(o, "gateway").env?.push({ name: "DRAIN_TIMEOUT_MS", value: "10s" }),
  );
});
