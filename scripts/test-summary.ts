/**
 * Reads node's TAP output for `npm test`'s closing summary: the leaf
 * failures (with their YAML blocks), and every skipped and todo test, each
 * by its full name ("suite > test"). Also the allowlist that lets a named
 * skip pass under CI.
 */
import { readFileSync } from "node:fs";

export interface TapSummary {
  /** One entry per leaf failure: "not ok: suite > test" and the first lines of its YAML block. */
  failures: string[];
  /** "suite > test # SKIP reason" */
  skipped: string[];
  /** "suite > test # TODO reason" */
  todo: string[];
}

export function summarizeTap(tap: string): TapSummary {
  const summary: TapSummary = { failures: [], skipped: [], todo: [] };
  const names: string[] = [];
  let block: string[] | undefined;
  for (const line of tap.split("\n")) {
    const subtest = /^(\s*)# Subtest: (.*)$/.exec(line);
    if (subtest) {
      const depth = (subtest[1]?.length ?? 0) / 4;
      names.length = depth;
      names[depth] = subtest[2] ?? "";
    }
    if (block) {
      block.push(line);
      if (/^\s*\.\.\.$/.test(line)) {
        // A parent that failed because a child did, or a child cancelled because its parent's hook failed, repeats what is already listed.
        if (!block.some((l) => /failureType: '(subtestsFailed|cancelledByParent)'/.test(l))) summary.failures.push(block.slice(0, 24).join("\n"));
        block = undefined;
      }
      continue;
    }
    const result = /^(\s*)(not )?ok \d+ - (.*?)(?: # (SKIP|TODO)\b ?(.*))?$/.exec(line);
    if (!result) continue;
    const depth = (result[1]?.length ?? 0) / 4;
    const fullName = [...names.slice(0, depth), result[3]].join(" > ");
    const directive = result[4];
    if (directive === "SKIP") summary.skipped.push(`${fullName} # SKIP ${result[5] ?? ""}`.trimEnd());
    else if (directive === "TODO") summary.todo.push(`${fullName} # TODO ${result[5] ?? ""}`.trimEnd());
    else if (result[2]) block = [`not ok: ${fullName}`];
  }
  return summary;
}

export interface AllowedSkip {
  /** The full name as the summary prints it, without the "# SKIP ..." part. */
  test: string;
  /** Why this test may not run in CI: a reason a reviewer can check. */
  reason: string;
}

/** Reads and checks the allowlist: every entry names a test and gives a reason. */
export function readSkipAllowlist(path: string): AllowedSkip[] {
  const parsed = JSON.parse(readFileSync(path, "utf8")) as { skips?: unknown };
  if (!Array.isArray(parsed.skips)) throw new Error(`${path}: expected {"skips": [{"test": ..., "reason": ...}]}`);
  return parsed.skips.map((entry: unknown, i) => {
    const e = entry as Partial<AllowedSkip>;
    if (typeof e.test !== "string" || e.test === "" || typeof e.reason !== "string" || e.reason.trim() === "") {
      throw new Error(`${path}: skips[${i}] needs a "test" and a non-empty "reason"`);
    }
    return { test: e.test, reason: e.reason };
  });
}

/** The skipped and todo tests the allowlist does not name. */
export function unlistedSkips(summary: TapSummary, allowed: AllowedSkip[]): string[] {
  const names = new Set(allowed.map((a) => a.test));
  return [...summary.skipped, ...summary.todo].filter((s) => !names.has(s.replace(/ # (SKIP|TODO)\b.*$/, "")));
}
