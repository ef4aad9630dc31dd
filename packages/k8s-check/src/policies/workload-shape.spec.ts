import { describe } from "node:test";
import type { IDeployment } from "kubernetes-models/apps/v1/Deployment";
import { flags, passesValidPlatform } from "../testing/check.js";
import { container, find } from "../testing/fixture.js";
import { workloadShape } from "./workload-shape.js";

describe("policy: workload-shape", () => {
  passesValidPlatform(workloadShape);
  flags(workloadShape, "pods without the part-of label", /Deployment\/orders: pods need labels/, (o) => {
    const labels = find<IDeployment>(o, "Deployment", "orders").spec?.template.metadata?.labels;
    if (labels) delete labels["app.kubernetes.io/part-of"];
  });
  flags(workloadShape, "selector that misses the pods", /Deployment\/checkout: selector does not match/, (o) => {
    const spec = find<IDeployment>(o, "Deployment", "checkout").spec;
    if (spec) spec.selector.matchLabels = { "app.kubernetes.io/name": "other" };
  });
  flags(workloadShape, "a Deployment that is no platform service", /Deployment\/extra: not a platform service/, (o) => {
    const copy = structuredClone(find<IDeployment>(o, "Deployment", "orders"));
    copy.metadata.name = "extra";
    o.push(copy);
  });
  flags(workloadShape, "a sidecar", /Deployment\/gateway: expected exactly one container/, (o) =>
    find<IDeployment>(o, "Deployment", "gateway").spec?.template.spec?.containers.push({ ...container(o, "gateway"), name: "sidecar" }),
  );
  flags(workloadShape, "a service without its Deployment", /Deployment\/orders: missing/, (o) => o.splice(o.indexOf(find(o, "Deployment", "orders")), 1));
});
