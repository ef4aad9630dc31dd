/**
 * `npm run setup:kubectl`: installs the pinned kubectl that the Kubernetes
 * manifest checks render deploy/k8s with (scripts/kubectl-install.ts).
 */
import { installPinnedKubectl } from "./kubectl-install.js";

try {
  process.stdout.write(`[setup:kubectl] ${await installPinnedKubectl()}\n`);
} catch (e) {
  process.stderr.write(`[setup:kubectl] failed: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
}
