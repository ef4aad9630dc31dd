/**
 * `npm test -- --changed` (scripts/test-selection.ts): which test files a
 * change since main can affect, on a small repository written here with the
 * real layout (workspaces under packages/ and services/, tests under
 * test/), and the changed files read from a real git repository.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { changedSinceMain, isTestFile, selectTests } from "../scripts/test-selection.js";

const workspace = (name: string, dependencies: Record<string, string> = {}, devDependencies: Record<string, string> = {}) =>
  JSON.stringify({ name, version: "0.1.0", private: true, dependencies, devDependencies });

/**
 * a <- b (dependency), a <- s (a service), s <- launcher (it starts the
 * services; no manifest says so); t's specs use b (a dev dependency), and
 * u depends on t: b's changes reach t's specs, not u.
 */
const layout: Record<string, string> = {
  "package.json": JSON.stringify({ workspaces: ["packages/*", "services/*"] }),
  "packages/a/package.json": workspace("@platform/a"),
  "packages/a/src/index.ts": "export const a = 1;\n",
  "packages/a/src/a.spec.ts": 'import "./index.js";\n',
  "packages/a/src/testing/watch.ts": "export const w = 1;\n",
  "packages/b/package.json": workspace("@platform/b", { "@platform/a": "0.1.0" }),
  "packages/b/src/index.ts": 'export { a } from "@platform/a";\n',
  "packages/b/src/b.spec.ts": 'import "./index.js";\n',
  "packages/launcher/package.json": workspace("@platform/launcher"),
  "packages/launcher/src/index.ts": "export const start = 1;\n",
  "packages/launcher/src/launcher.spec.ts": 'import "./index.js";\n',
  "packages/t/package.json": workspace("@platform/t", {}, { "@platform/b": "0.1.0" }),
  "packages/t/src/t.spec.ts": 'import "@platform/b";\n',
  "packages/u/package.json": workspace("@platform/u", { "@platform/t": "0.1.0" }),
  "packages/u/src/u.spec.ts": 'import "@platform/t";\n',
  "services/s/package.json": workspace("@platform/s", { "@platform/a": "0.1.0" }),
  "services/s/src/main.ts": 'import "@platform/a";\n',
  "services/s/src/s.spec.ts": 'import "./main.js";\n',
  "test/uses-b.test.ts": 'import { a } from "@platform/b";\n',
  "test/e2e/platform.test.ts": 'import { go } from "../helpers/start.js";\n',
  "test/helpers/start.ts": 'import "@platform/launcher";\nexport const go = 1;\n',
  "test/watcher.test.ts": 'import { w } from "../packages/a/src/testing/watch.js";\n',
  "test/plain.test.ts": 'import { test } from "node:test";\n',
  "scripts/tool.ts": "export {};\n",
  "README.md": "# r\n",
};
const allTests = Object.keys(layout).filter(isTestFile).sort();

function withRepo(fn: (dir: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), "test-selection-"));
  try {
    for (const [path, text] of Object.entries(layout)) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), text);
    }
    fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const selected = (dir: string, changed: string[]) => {
  const s = selectTests(dir, changed, allTests);
  return s.all ? s.why : s.files;
};

test("the test files are the workspaces' *.spec.ts and test/'s *.test.ts", () => {
  assert.deepEqual(allTests, [
    "packages/a/src/a.spec.ts",
    "packages/b/src/b.spec.ts",
    "packages/launcher/src/launcher.spec.ts",
    "packages/t/src/t.spec.ts",
    "packages/u/src/u.spec.ts",
    "services/s/src/s.spec.ts",
    "test/e2e/platform.test.ts",
    "test/plain.test.ts",
    "test/uses-b.test.ts",
    "test/watcher.test.ts",
  ]);
});

test("a change in a package runs its specs, its dependents' (services and, through them, the launcher), the specs of those that use it as a dev dependency (not their dependents'), and the tests that reach any of them", () => {
  withRepo((dir) => {
    assert.deepEqual(selected(dir, ["packages/a/src/index.ts"]), [
      "packages/a/src/a.spec.ts",
      "packages/b/src/b.spec.ts",
      "packages/launcher/src/launcher.spec.ts",
      "packages/t/src/t.spec.ts",
      "services/s/src/s.spec.ts",
      "test/e2e/platform.test.ts",
      "test/uses-b.test.ts",
      "test/watcher.test.ts",
    ]);
  });
});

test("a change in a service runs its specs, the launcher's, and the tests that start the platform (through a helper)", () => {
  withRepo((dir) => {
    assert.deepEqual(selected(dir, ["services/s/src/main.ts"]), [
      "packages/launcher/src/launcher.spec.ts",
      "services/s/src/s.spec.ts",
      "test/e2e/platform.test.ts",
    ]);
  });
});

test("a package nothing depends on runs only its own specs; a deleted file counts for its workspace", () => {
  withRepo((dir) => {
    assert.deepEqual(selected(dir, ["packages/u/src/gone.ts"]), ["packages/u/src/u.spec.ts"]);
    assert.deepEqual(selected(dir, ["packages/t/src/gone.ts"]), ["packages/t/src/t.spec.ts", "packages/u/src/u.spec.ts"]);
  });
});

test("a changed test file runs itself; a changed helper under test/ runs the tests that import it", () => {
  withRepo((dir) => {
    assert.deepEqual(selected(dir, ["packages/b/src/b.spec.ts", "test/plain.test.ts"]), ["packages/b/src/b.spec.ts", "test/plain.test.ts"]);
    assert.deepEqual(selected(dir, ["test/helpers/start.ts"]), ["test/e2e/platform.test.ts"]);
  });
});

test("a change outside the workspaces and test/ runs everything, and says which file", () => {
  withRepo((dir) => {
    assert.equal(selected(dir, ["packages/a/src/index.ts", "scripts/tool.ts"]), "scripts/tool.ts is outside the workspaces and test/");
    assert.equal(selected(dir, ["README.md"]), "README.md is outside the workspaces and test/");
  });
});

test("no change selects no file", () => {
  withRepo((dir) => assert.deepEqual(selected(dir, []), []));
});

test("changed since main: committed on the branch, staged, unstaged, untracked and deleted, not what main changed after the branch left it", () => {
  withRepo((dir) => {
    const git = (...args: string[]) =>
      execFileSync("git", ["-c", "user.name=test", "-c", "user.email=test@example.com", ...args], { cwd: dir, encoding: "utf8" });
    git("init", "-q", "-b", "main");
    git("add", ".");
    git("commit", "-q", "-m", "start");
    git("checkout", "-q", "-b", "feature");
    writeFileSync(join(dir, "packages/a/src/index.ts"), "export const a = 2;\n");
    git("commit", "-q", "-am", "on the branch");
    git("checkout", "-q", "main");
    writeFileSync(join(dir, "README.md"), "# changed on main\n");
    git("commit", "-q", "-am", "on main after the branch left");
    git("checkout", "-q", "feature");
    writeFileSync(join(dir, "packages/b/src/index.ts"), "export const b = 1;\n");
    git("add", "packages/b/src/index.ts");
    writeFileSync(join(dir, "services/s/src/main.ts"), "export {};\n");
    writeFileSync(join(dir, "test/new.test.ts"), "export {};\n");
    rmSync(join(dir, "packages/t/src/t.spec.ts"));
    const { base, files } = changedSinceMain(dir);
    assert.match(base, /^main \([0-9a-f]{12}\)$/);
    assert.deepEqual(files, ["packages/a/src/index.ts", "packages/b/src/index.ts", "packages/t/src/t.spec.ts", "services/s/src/main.ts", "test/new.test.ts"]);
  });
});
