/**
 * What the image runs, assembled in one folder (the Dockerfile's build stage
 * calls it, and test/e2e/image-command.test.ts does the same on this
 * machine):
 *
 *   node --import tsx scripts/runtime-tree.ts <empty folder>     after npm ci and npm run build
 *
 * - package.json and package-lock.json;
 * - every workspace's package.json and what its "files" lists (dist/, and
 *   migrations/ for a service with a database): no sources, no tests;
 * - node_modules without dev and optional dependencies (`npm prune`): no
 *   tsx, esbuild, typescript or patch-package, no embedded PostgreSQL and
 *   no Node binary from the registry. The connect-es patch stays applied:
 *   the pruned packages are the ones `npm ci` patched.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmdirSync } from "node:fs";
import { join, normalize, resolve } from "node:path";
import { copyTree } from "./build/copy-tree.js";
import { forbiddenInRuntime } from "./build/runtime-rules.js";
import { listWorkspaces } from "./build/workspaces.js";

const root = process.cwd();
const dest = process.argv[2];
const fail = (message: string): never => {
  process.stderr.write(`[runtime-tree] ${message}\n`);
  process.exit(1);
};
if (!dest) fail("usage: node --import tsx scripts/runtime-tree.ts <empty folder>");
const out = resolve(dest!);
if (existsSync(out) && readdirSync(out).length > 0) fail(`${out} is not empty`);
if (!existsSync(join(root, "node_modules"))) fail("no node_modules: run npm ci first");

mkdirSync(out, { recursive: true });
for (const f of ["package.json", "package-lock.json"]) copyFileSync(join(root, f), join(out, f));
// The image runs the services: the private workspaces. A published library
// (the typed client) ships to the registry with its declarations instead.
for (const w of listWorkspaces(root).filter((w) => w.manifest.private === true)) {
  const files = w.manifest.files;
  if (!Array.isArray(files) || files.length === 0 || !files.every((f): f is string => typeof f === "string")) {
    fail(`${w.dir}/package.json: "files" must list what the workspace ships (e.g. ["dist"]); see docs/deployment.md`);
  }
  mkdirSync(join(out, w.dir), { recursive: true });
  copyFileSync(join(root, w.dir, "package.json"), join(out, w.dir, "package.json"));
  for (const f of files as string[]) {
    // Plain paths inside the workspace: this is not npm pack, no globs.
    if (normalize(f).startsWith("..") || /[*?{}[\]!]/.test(f))
      fail(`${w.dir}/package.json: "files" entry ${JSON.stringify(f)} must be a plain path inside the workspace`);
    if (!existsSync(join(root, w.dir, f))) fail(`${w.dir}/${f} does not exist${f.startsWith("dist") ? " (run npm run build)" : ""}`);
    copyTree(join(root, w.dir, f), join(out, w.dir, f));
  }
}
copyTree(join(root, "node_modules"), join(out, "node_modules"));
// --ignore-scripts: the root's postinstall (patch-package) already ran at npm ci; pruning only removes packages.
const pruned = spawnSync("npm", ["prune", "--omit=dev", "--omit=optional", "--ignore-scripts", "--no-audit", "--no-fund", "--offline"], {
  cwd: out,
  stdio: ["ignore", "inherit", "inherit"],
});
if (pruned.status !== 0) fail(`npm prune failed (exit ${pruned.status ?? pruned.signal})`);
// npm leaves the scope folders of what it removed (@esbuild/, @types/...), empty.
for (const name of readdirSync(join(out, "node_modules"))) {
  const dir = join(out, "node_modules", name);
  if (name.startsWith("@") && readdirSync(dir).length === 0) rmdirSync(dir);
}
const left = forbiddenInRuntime.filter((name) => existsSync(join(out, "node_modules", name)));
if (left.length > 0) fail(`still in node_modules after pruning: ${left.join(", ")} (a production dependency needs them?)`);
process.stdout.write(`[runtime-tree] ${out}: manifests, workspaces' "files", production node_modules\n`);
