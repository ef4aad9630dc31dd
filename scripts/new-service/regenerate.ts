/**
 * Everything that lists services (compose, Kubernetes,
 * network policies, prometheus, the database init script, the example env,
 * the gateway's forwarded APIs, the tests' call graph) is derived from the
 * service manifests by @platform/registry (`generateServiceArtifacts(root)`,
 * run as `npm run generate:services`). `npm run new-service` edits none of
 * those files itself: after writing the new service it calls this one
 * function, which runs that script.
 */
import { spawnSync } from "node:child_process";

export const regenerateScript = "generate:services";

export function regenerateServiceArtifacts(root: string): void {
  const r = spawnSync("npm", ["run", "--silent", regenerateScript], { cwd: root, encoding: "utf8" });
  if (r.status !== 0) {
    // The new service is rolled back; running the script again once the cause is fixed brings its outputs back in line.
    throw new Error(`npm run ${regenerateScript} failed (exit ${r.status ?? r.signal}); fix the cause, then run it again:\n${r.stdout}${r.stderr}`);
  }
}
