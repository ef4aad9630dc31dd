/**
 * Which test files `npm test -- --changed` runs: the ones a change since
 * main can affect (docs/testing.md states the rule).
 *
 * - A changed spec or test file runs itself.
 * - A change inside a workspace (packages/X, services/X) runs the specs of
 *   X and of every workspace that depends on X, directly or not (through
 *   dependencies, peer or optional dependencies), the specs of the
 *   workspaces that use one of those as a devDependency (only their specs
 *   use it), and the test files under test/ that import one of those
 *   workspaces (as @platform/..., or by a relative path into it), directly
 *   or through a helper under test/. The launcher
 *   starts every service as a process, not by importing it, so it counts as
 *   depending on every service: a change in a service runs the end-to-end
 *   tests.
 * - A changed helper under test/ runs the test files that import it.
 * - Any other change (scripts/, proto/, deploy/, the root's files, docs/...)
 *   runs everything: too much reads those to tell.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import ts from "typescript";
import { listWorkspaces } from "./build/workspaces.js";

export type Selection = { all: true; why: string } | { all: false; files: string[] };

interface WorkspaceNode {
  dir: string;
  name: string;
  /** Names of the workspaces its code depends on (dependencies, peer, optional). */
  uses: Set<string>;
  /** Names of the workspaces only its specs use (devDependencies). */
  specsUse: Set<string>;
}

/** A test file is a *.spec.ts inside a workspace or a *.test.ts under test/. */
export function isTestFile(file: string): boolean {
  return (/^(packages|services)\//.test(file) && file.endsWith(".spec.ts")) || (file.startsWith("test/") && file.endsWith(".test.ts"));
}

function workspaceNodes(root: string): WorkspaceNode[] {
  const names = new Set<string>();
  const nodes = listWorkspaces(root).map((w) => {
    const m = JSON.parse(readFileSync(join(root, w.dir, "package.json"), "utf8")) as Record<string, Record<string, string> | undefined> & { name?: string };
    const uses = new Set(["dependencies", "peerDependencies", "optionalDependencies"].flatMap((k) => Object.keys(m[k] ?? {})));
    names.add(m.name ?? w.dir);
    return { dir: w.dir, name: m.name ?? w.dir, uses, specsUse: new Set(Object.keys(m["devDependencies"] ?? {})) };
  });
  // The launcher runs the services as processes: a dependency no manifest states.
  const launcher = nodes.find((n) => n.dir === "packages/launcher");
  for (const n of nodes) if (launcher && n.dir.startsWith("services/")) launcher.uses.add(n.name);
  for (const n of nodes) for (const u of n.uses) if (!names.has(u)) n.uses.delete(u);
  for (const n of nodes) for (const u of n.specsUse) if (!names.has(u)) n.specsUse.delete(u);
  return nodes;
}

/** `changed` and every workspace that depends on one of them, directly or not (names). */
function withDependents(nodes: WorkspaceNode[], changed: Set<string>): Set<string> {
  const out = new Set(changed);
  for (let grew = true; grew; ) {
    grew = false;
    for (const n of nodes) {
      if (!out.has(n.name) && [...n.uses].some((u) => out.has(u))) {
        out.add(n.name);
        grew = true;
      }
    }
  }
  return out;
}

/** What one file imports: workspace names, and repository paths of relative imports (resolved .js -> .ts). */
function importsOf(root: string, file: string): { workspaces: Set<string>; files: string[] } {
  const workspaces = new Set<string>();
  const files: string[] = [];
  const text = existsSync(join(root, file)) ? readFileSync(join(root, file), "utf8") : "";
  for (const { fileName } of ts.preProcessFile(text, true, true).importedFiles) {
    const pkg = /^(@platform\/[^/]+)/.exec(fileName)?.[1];
    if (pkg) workspaces.add(pkg);
    else if (fileName.startsWith(".")) files.push(normalize(join(dirname(file), fileName)).replace(/\.js$/, ".ts"));
  }
  return { workspaces, files };
}

/**
 * The workspaces (names) and the helper files under test/ that a test file
 * reaches through its imports, following relative imports under test/ and
 * counting a relative import into a workspace as an import of it.
 */
function reach(root: string, nodes: WorkspaceNode[], testFile: string): { workspaces: Set<string>; helpers: Set<string> } {
  const workspaces = new Set<string>();
  const helpers = new Set<string>();
  const queue = [testFile];
  const seen = new Set(queue);
  while (queue.length > 0) {
    const file = queue.pop()!;
    const found = importsOf(root, file);
    for (const w of found.workspaces) workspaces.add(w);
    for (const f of found.files) {
      const owner = nodes.find((n) => f.startsWith(`${n.dir}/`));
      if (owner) workspaces.add(owner.name);
      else if (f.startsWith("test/") && !seen.has(f)) {
        seen.add(f);
        helpers.add(f);
        queue.push(f);
      }
    }
  }
  return { workspaces, helpers };
}

/** The test files among `allTests` that `changed` (repository paths) can affect. */
export function selectTests(root: string, changed: string[], allTests: string[]): Selection {
  const nodes = workspaceNodes(root);
  const changedWorkspaces = new Set<string>();
  const changedHelpers = new Set<string>();
  const direct = new Set<string>();
  for (const file of changed) {
    const owner = nodes.find((n) => file.startsWith(`${n.dir}/`));
    if (isTestFile(file)) direct.add(file);
    else if (owner) changedWorkspaces.add(owner.name);
    else if (file.startsWith("test/") && file.endsWith(".ts")) changedHelpers.add(file);
    else return { all: true, why: `${file} is outside the workspaces and test/` };
  }
  // A changed spec also counts as a change to its workspace's code only through what it imports: it runs itself.
  const affected = withDependents(nodes, changedWorkspaces);
  const specsAffected = nodes.filter((n) => affected.has(n.name) || [...n.specsUse].some((u) => affected.has(u))).map((n) => n.dir);
  const files = allTests.filter((t) => {
    if (direct.has(t)) return true;
    if (specsAffected.some((d) => t.startsWith(`${d}/`))) return true;
    if (!t.startsWith("test/")) return false;
    const r = reach(root, nodes, t);
    return [...r.workspaces].some((w) => affected.has(w)) || [...r.helpers].some((h) => changedHelpers.has(h));
  });
  return { all: false, files };
}

function git(root: string, args: string[]): string[] {
  const r = spawnSync("git", args, { cwd: root, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr.trim()}`);
  return r.stdout.split("\n").filter((l) => l.length > 0);
}

/**
 * Files changed since this branch left main (main, else origin/main):
 * committed on the branch, staged, unstaged and untracked; deleted files
 * included (their workspace changed).
 */
export function changedSinceMain(root: string): { base: string; files: string[] } {
  const main = ["main", "origin/main"].find((ref) => spawnSync("git", ["rev-parse", "--verify", "--quiet", `${ref}^{commit}`], { cwd: root }).status === 0);
  if (!main) throw new Error("--changed: no main or origin/main branch to compare with");
  const base = git(root, ["merge-base", "HEAD", main])[0]!;
  const files = new Set([...git(root, ["diff", "--name-only", base]), ...git(root, ["ls-files", "--others", "--exclude-standard"])]);
  return { base: `${main} (${base.slice(0, 12)})`, files: [...files].sort() };
}
