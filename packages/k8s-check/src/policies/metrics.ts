import { withContainer, type Policy } from "./policy.js";

export const metrics: Policy = {
  name: "metrics",
  rule: "Pods are annotated for Prometheus: scraped on the admin port at /metrics.",
  check(m) {
    const out: string[] = [];
    for (const w of withContainer(m)) {
      const ann = w.deployment.spec?.template.metadata?.annotations ?? {};
      if (ann["prometheus.io/scrape"] !== "true" || ann["prometheus.io/port"] !== String(w.adminPort) || ann["prometheus.io/path"] !== "/metrics") {
        out.push(`Deployment/${w.name}: pods need prometheus.io/scrape "true", port "${w.adminPort}" (admin) and path /metrics`);
      }
    }
    return out;
  },
};
