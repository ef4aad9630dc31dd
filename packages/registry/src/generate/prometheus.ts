import type { LoadedManifest } from "../manifest.js";

/** observability/prometheus.yml's static targets: every service's admin port, labelled `service`. */
export function prometheusTargets(manifests: readonly LoadedManifest[]): string {
  return `${manifests
    .toReversed()
    .map((m) => [`      - targets: ["${m.name}:${m.ports.admin}"]`, `        labels:`, `          service: ${m.name}`].join("\n"))
    .join("\n")}\n`;
}
