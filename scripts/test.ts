/**
 * `npm test`: proto lint, format and breaking-change check (against main), type check, then every test file
 * (unit tests beside the code as *.spec.ts, integration and end-to-end tests
 * under test/ as *.test.ts) with node's test runner.
 *
 *   npm test                     everything
 *   npm test -- path/to/x.test.ts  only the given files
 *
 * At the end it lists every failing, skipped and todo test. With CI set
 * (CI=true), a skipped or todo test fails the run unless
 * test/skip-allowlist.json names it with a reason: node's runner exits 0 on
 * skips, and a check that silently stops running is a check that cannot fail.
 */
import "../packages/launcher/src/require-node.js";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { readSkipAllowlist, summarizeTap, unlistedSkips } from "./test-summary.js";

const root = process.cwd();

function run(title: string, cmd: string, args: string[]): void {
  process.stdout.write(`\n== ${title}\n`);
  const r = spawnSync(cmd, args, { stdio: "inherit", cwd: root });
  if (r.status !== 0) {
    process.stdout.write(`\n${title} failed (exit ${r.status ?? r.signal})\n`);
    process.exit(r.status ?? 1);
  }
}

function findTests(dir: string, suffix: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(suffix) && !e.parentPath.includes("node_modules"))
    .map((e) => relative(root, join(e.parentPath, e.name)))
    .sort();
}

const only = process.argv.slice(2);
const files =
  only.length > 0
    ? only
    : [...findTests("packages", ".spec.ts"), ...findTests("services", ".spec.ts"), ...findTests("lab", ".spec.ts"), ...findTests("test", ".test.ts")];

if (only.length === 0) {
  run("buf lint", "npx", ["buf", "lint"]);
  run("buf format", "npx", ["buf", "format", "--diff", "--exit-code"]);
  run("buf breaking", process.execPath, ["--import", "tsx", "scripts/proto-breaking.ts"]);
  run("typecheck", "npx", ["tsc", "--noEmit", "-p", "tsconfig.json"]);
}

/**
 * The run's output goes to the terminal as it comes (node's spec reporter on
 * a terminal, TAP in a log); a second TAP copy goes to a file for the summary.
 * Failures and skips are repeated at the end, because a long run's log is
 * often read from its tail (CI keeps the last few kilobytes).
 */
function runTests(title: string, testArgs: string[]): void {
  process.stdout.write(`\n== ${title}\n`);
  const dir = mkdtempSync(join(tmpdir(), "npm-test-"));
  const tapFile = join(dir, "run.tap");
  const reporters = ["--test-reporter", process.stdout.isTTY ? "spec" : "tap", "--test-reporter-destination", "stdout", "--test-reporter", "tap", "--test-reporter-destination", tapFile];
  const r = spawnSync(process.execPath, [...reporters, ...testArgs], { stdio: "inherit", cwd: root });
  const summary = summarizeTap(readFileSync(tapFile, "utf8"));
  rmSync(dir, { recursive: true, force: true });
  const section = (heading: string, lines: string[]) => {
    if (lines.length > 0) process.stdout.write(`\n== ${heading} (${lines.length})\n${lines.map((l) => `${l}\n`).join("")}`);
  };
  section("failing tests", summary.failures);
  section("skipped tests", summary.skipped);
  section("todo tests", summary.todo);
  if (r.status !== 0) {
    process.stdout.write(`\n${title} failed (exit ${r.status ?? r.signal})\n`);
    process.exit(r.status ?? 1);
  }
  if (process.env["CI"]) {
    const unlisted = unlistedSkips(summary, readSkipAllowlist(join(root, "test/skip-allowlist.json")));
    if (unlisted.length > 0) {
      process.stdout.write(`\n${title} failed: with CI set, these were skipped or left todo and test/skip-allowlist.json does not name them:\n${unlisted.map((n) => `  ${n}\n`).join("")}`);
      process.exit(1);
    }
  }
}

runTests(`tests (${files.length} files)`, ["--import", "tsx", "--test", "--test-timeout=300000", ...files]);
