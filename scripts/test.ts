/**
 * `npm test`: proto lint and format, type check, then every test file
 * (unit tests beside the code as *.spec.ts, integration and end-to-end tests
 * under test/ as *.test.ts) with node's test runner.
 *
 *   npm test                     everything
 *   npm test -- path/to/x.test.ts  only the given files
 */
import { spawnSync } from "node:child_process";
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
  run("typecheck", "npx", ["tsc", "--noEmit", "-p", "tsconfig.json"]);
}
run(`tests (${files.length} files)`, process.execPath, ["--import", "tsx", "--test", "--test-timeout=300000", ...files]);
