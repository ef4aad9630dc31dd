import { describe } from "node:test";
import type { IDeployment } from "kubernetes-models/apps/v1/Deployment";
import { flags, passesValidPlatform } from "../testing/check.js";
import { find } from "../testing/fixture.js";
import { metrics } from "./metrics.js";

describe("policy: metrics", () => {
  passesValidPlatform(metrics);
  flags(metrics, "scraped on the RPC port", /Deployment\/checkout: pods need prometheus.io\/scrape "true", port "9081"/, (o) => {
    const ann = find<IDeployment>(o, "Deployment", "checkout").spec?.template.metadata?.annotations;
    if (ann) ann["prometheus.io/port"] = "8081";
  });
});
