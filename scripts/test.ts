/**
 * `npm test`: proto lint, format and breaking-change check (against main), type check, then every test file
 * (unit tests beside the code as *.spec.ts, integration and end-to-end tests
 * under test/ as *.test.ts) with node's test runner.
 *
 *   npm test                     everything
 *   npm test -- path/to/x.test.ts  only the given files
 */
import "../packages/launcher/src/require-node.js";
import { spawn, spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join, relative } from "node:path";

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
    : [...findTests("packages", ".spec.ts"), ...findTests("services", ".spec.ts"), ...findTests("test", ".test.ts")];

if (only.length === 0) {
  run("buf lint", "npx", ["buf", "lint"]);
  run("buf format", "npx", ["buf", "format", "--diff", "--exit-code"]);
  run("buf breaking", process.execPath, ["--import", "tsx", "scripts/proto-breaking.ts"]);
  run("typecheck", "npx", ["tsc", "--noEmit", "-p", "tsconfig.json"]);
}

/**
 * The test run's TAP goes through as it comes; failures are repeated at the
 * end, because a long run's log is often read from its tail (CI keeps the
 * last few kilobytes) and the failing test would otherwise scroll away.
 */
function runTests(title: string, args: string[]): void {
  process.stdout.write(`\n== ${title}\n`);
  const child = spawn(process.execPath, args, { cwd: root, stdio: ["inherit", "pipe", "inherit"] });
  const failures = new FailureCollector();
  let partial = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    process.stdout.write(chunk);
    const lines = (partial + chunk).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) failures.line(line);
  });
  child.on("close", (status, signal) => {
    if (partial) failures.line(partial);
    const summary = failures.summary();
    if (summary) process.stdout.write(`\n== failing tests\n${summary}`);
    if (status !== 0) {
      process.stdout.write(`\n${title} failed (exit ${status ?? signal})\n`);
      process.exit(status ?? 1);
    }
  });
}

/** Picks the leaf failures (not TODO, not "a subtest failed") out of node's TAP, with their YAML blocks. */
class FailureCollector {
  private readonly found: string[] = [];
  private current: string[] | undefined;
  private readonly names: string[] = [];

  line(line: string): void {
    const subtest = /^(\s*)# Subtest: (.*)$/.exec(line);
    if (subtest) {
      const depth = (subtest[1]?.length ?? 0) / 4;
      this.names.length = depth;
      this.names[depth] = subtest[2] ?? "";
    }
    if (this.current) {
      this.current.push(line);
      if (/^\s*\.\.\.$/.test(line)) this.finish();
      return;
    }
    const m = /^(\s*)not ok \d+ - (.*)$/.exec(line);
    if (m && !/ # (TODO|SKIP)\b/.test(m[2] ?? "")) {
      const depth = (m[1]?.length ?? 0) / 4;
      this.current = [`not ok: ${[...this.names.slice(0, depth), m[2]].join(" > ")}`];
    }
  }

  private finish(): void {
    const block = this.current ?? [];
    this.current = undefined;
    // A parent that failed because a child did, or a child cancelled because its parent's hook failed, repeats what is already listed.
    if (block.some((l) => /failureType: '(subtestsFailed|cancelledByParent)'/.test(l))) return;
    this.found.push(block.slice(0, 24).join("\n"));
  }

  summary(): string {
    return this.found.map((f) => `${f}\n`).join("");
  }
}

const testArgs = ["--import", "tsx", "--test", "--test-timeout=300000", ...files];
// On a terminal node's own spec reporter lists the failures at the end; in a log (CI), TAP plus our summary
// (asked for by name: node 20 wrote TAP to a pipe by default, node 22 and later write spec everywhere).
if (process.stdout.isTTY) run(`tests (${files.length} files)`, process.execPath, testArgs);
else runTests(`tests (${files.length} files)`, ["--test-reporter=tap", ...testArgs]);
