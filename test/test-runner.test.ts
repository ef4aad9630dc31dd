/**
 * `npm test`'s own runner (scripts/test.ts): a skipped or todo test is listed
 * in the closing summary next to the failures, and with CI set it fails the
 * run unless test/skip-allowlist.json names it with a reason. Runs the real
 * script on small test files written here.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readSkipAllowlist, summarizeTap, unlistedSkips } from "../scripts/test-summary.js";

function runNpmTest(source: string, env: Record<string, string | undefined>): { status: number | null; stdout: string } {
  const dir = mkdtempSync(join(tmpdir(), "runner-test-"));
  try {
    const file = join(dir, "sample.test.ts");
    writeFileSync(file, source);
    // Its sample files start no platform: no build first (scripts/test.ts builds dist/ unless told "source").
    const childEnv: NodeJS.ProcessEnv = { ...process.env, PLATFORM_SERVICES_FROM: "source", ...env };
    // Without the test runner's marker, so that the nested run reports normally.
    delete childEnv["NODE_TEST_CONTEXT"];
    for (const [k, v] of Object.entries(env)) if (v === undefined) delete childEnv[k];
    const r = spawnSync(process.execPath, ["--import", "tsx", "scripts/test.ts", file], { env: childEnv, encoding: "utf8" });
    return { status: r.status, stdout: r.stdout };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const withSkipAndTodo = `
import { describe, test } from "node:test";
describe("outer", () => {
  test("runs", () => {});
  test("left out", { skip: "no tool here" }, () => {});
  test("not written yet", { todo: true }, () => {});
});
`;

test("without CI: skips and todos pass the run and are listed in the summary", () => {
  const r = runNpmTest(withSkipAndTodo, { CI: undefined });
  assert.equal(r.status, 0, r.stdout.slice(-2000));
  assert.match(r.stdout, /== skipped tests \(1\)\nouter > left out # SKIP no tool here\n/);
  assert.match(r.stdout, /== todo tests \(1\)\nouter > not written yet # TODO/);
});

test("with CI=true: an unlisted skip or todo fails the run, naming each", () => {
  const r = runNpmTest(withSkipAndTodo, { CI: "true" });
  assert.equal(r.status, 1, r.stdout.slice(-2000));
  assert.match(r.stdout, /test\/skip-allowlist\.json does not name them:\n {2}outer > left out # SKIP no tool here\n {2}outer > not written yet # TODO/);
});

test("with CI=true and nothing skipped: the run passes", () => {
  const r = runNpmTest(`import { test } from "node:test";\ntest("runs", () => {});\n`, { CI: "true" });
  assert.equal(r.status, 0, r.stdout.slice(-2000));
  assert.doesNotMatch(r.stdout, /== skipped tests/);
});

test("a failure is listed in the summary with its suite, and fails the run", () => {
  const r = runNpmTest(
    `import { describe, test } from "node:test";\nimport assert from "node:assert/strict";\ndescribe("s", () => { test("breaks", () => assert.equal(1, 2)); });\n`,
    { CI: undefined },
  );
  assert.equal(r.status, 1);
  assert.match(r.stdout, /== failing tests \(1\)\nnot ok: s > breaks\n/);
});

test("the allowlist lets a named skip pass, and every entry must give a reason", () => {
  const summary = summarizeTap("# Subtest: a\n    # Subtest: b\n    ok 1 - b # SKIP why\n    1..1\nok 1 - a\n");
  assert.deepEqual(summary.skipped, ["a > b # SKIP why"]);
  assert.deepEqual(unlistedSkips(summary, [{ test: "a > b", reason: "tool not packaged for Debian" }]), []);
  assert.deepEqual(unlistedSkips(summary, []), ["a > b # SKIP why"]);
  const dir = mkdtempSync(join(tmpdir(), "allowlist-"));
  try {
    const path = join(dir, "allow.json");
    writeFileSync(path, JSON.stringify({ skips: [{ test: "a > b", reason: " " }] }));
    assert.throws(() => readSkipAllowlist(path), /skips\[0\] needs a "test" and a non-empty "reason"/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the repository's allowlist is empty: .ci/run installs what every test needs", () => {
  assert.deepEqual(readSkipAllowlist("test/skip-allowlist.json"), []);
  assert.ok(JSON.parse(readFileSync("test/skip-allowlist.json", "utf8")).about);
});
