/**
 * Which kubectl renders the manifests: the one pinned in tools/kubectl
 * (kubectl v1.34.5 with kustomize v5.7.1, installed by `npm run
 * setup:kubectl`), or the one named by KUBECTL. Real kustomize, so the
 * checks see exactly what `kubectl apply -k` would apply.
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const pinnedKubectlVersion = "v1.34.5";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
/** Where scripts/kubectl-install.ts puts the pinned binary (npm run setup:kubectl, npm run audit). */
export const pinnedKubectlPath = `${repoRoot}tools/kubectl/bin/kubectl`;

/** The kubectl to run; a clear error when there is none. */
export function kubectlPath(env: NodeJS.ProcessEnv = process.env, pinned = pinnedKubectlPath): string {
  const fromEnv = env["KUBECTL"];
  if (fromEnv !== undefined && fromEnv !== "") return fromEnv;
  if (existsSync(pinned)) return pinned;
  throw new Error(
    `kubectl is not installed at ${pinned}: run \`npm run setup:kubectl\` (linux/amd64), or set KUBECTL to a kubectl ${pinnedKubectlVersion.replace(/\.\d+$/, "")} with kustomize v5`,
  );
}
