/**
 * `npm run lint:breaking` (and a step of `npm test`): `buf breaking` of the
 * working tree's proto/ against the API as it was before this change, so a
 * breaking change to the public API (a deleted field, a renamed method, a
 * changed type: buf.yaml's FILE rules) fails CI.
 *
 * "Before this change" is, in this order:
 *   - BUF_BREAKING_AGAINST, a git ref, when set;
 *   - on a branch: where it left main (git merge-base HEAD main), so that
 *     every commit of the branch is checked;
 *   - on main itself (CI's fresh clone): the parent of the last commit that
 *     changed proto/, so that the latest API change is checked.
 * Uncommitted changes are always included: the working tree is compared.
 *
 * The baseline's proto/ and buf.yaml are taken with `git archive` into a
 * temporary directory: buf's own `.git#ref=` input clones the repository,
 * which fails in a git worktree (.git is a file there) and in CI's clone.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export type Baseline = { ref: string; why: string } | { skip: string };

export interface BreakingResult {
  baseline: Baseline;
  ok: boolean;
  /** buf's findings, one per line (empty when ok). */
  output: string;
}

const buf = join(dirname(createRequire(import.meta.url).resolve("@bufbuild/buf/package.json")), "bin", "buf");

function git(cwd: string, args: string[]): string | undefined {
  const r = spawnSync("git", args, { cwd, encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/** Which commit's API the working tree is checked against, and why that one. */
export function breakingBaseline(cwd: string, env: NodeJS.ProcessEnv = process.env): Baseline {
  if (git(cwd, ["rev-parse", "--is-inside-work-tree"]) !== "true") return { skip: "not a git checkout: nothing to compare against" };
  const override = env["BUF_BREAKING_AGAINST"];
  if (override) {
    const ref = git(cwd, ["rev-parse", "--verify", "--quiet", `${override}^{commit}`]);
    if (!ref) throw new Error(`BUF_BREAKING_AGAINST=${override} is not a commit in this repository`);
    return { ref, why: `BUF_BREAKING_AGAINST=${override}` };
  }
  const head = git(cwd, ["rev-parse", "HEAD"]);
  if (!head) return { skip: "no commit yet" };
  const main = ["main", "origin/main"].find((r) => git(cwd, ["rev-parse", "--verify", "--quiet", `${r}^{commit}`]) !== undefined);
  if (main && git(cwd, ["rev-parse", `${main}^{commit}`]) !== head) {
    const base = git(cwd, ["merge-base", "HEAD", main]);
    if (base && base !== head) return { ref: base, why: `where this branch left ${main}` };
  }
  const last = git(cwd, ["log", "-1", "--format=%H", "--", "proto"]);
  if (!last) return { skip: "no commit has changed proto/ yet" };
  const parent = git(cwd, ["rev-parse", "--verify", "--quiet", `${last}^`]);
  if (!parent) return { skip: "the commit that created proto/ has no parent to compare with" };
  return { ref: parent, why: `before ${last.slice(0, 12)}, the last commit that changed proto/` };
}

export function checkBreaking(cwd: string, env: NodeJS.ProcessEnv = process.env): BreakingResult {
  const baseline = breakingBaseline(cwd, env);
  if ("skip" in baseline) return { baseline, ok: true, output: "" };
  const dir = mkdtempSync(join(tmpdir(), "buf-breaking-"));
  try {
    const tar = execFileSync("git", ["archive", "--format=tar", baseline.ref, "--", "proto", "buf.yaml"], { cwd, maxBuffer: 64 << 20 });
    execFileSync("tar", ["-x", "-C", dir], { input: tar });
    const r = spawnSync(buf, ["breaking", "--against", dir], { cwd, encoding: "utf8" });
    if (r.status !== 0 && r.status !== 100) throw new Error(`buf breaking could not run (exit ${r.status ?? r.signal}): ${r.stderr}${r.stdout}`);
    return { baseline, ok: r.status === 0, output: `${r.stdout}${r.stderr}`.trim() };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const result = checkBreaking(process.cwd());
  if ("skip" in result.baseline) {
    process.stdout.write(`buf breaking: skipped (${result.baseline.skip})\n`);
  } else if (result.ok) {
    process.stdout.write(`buf breaking: no breaking change against ${result.baseline.ref.slice(0, 12)} (${result.baseline.why})\n`);
  } else {
    process.stdout.write(`buf breaking: breaking changes against ${result.baseline.ref.slice(0, 12)} (${result.baseline.why}):\n${result.output}\n`);
    process.stdout.write("A public API change must stay wire and source compatible; a deliberate break goes into a new package version (e.g. checkout.v2).\n");
    process.exit(1);
  }
}
