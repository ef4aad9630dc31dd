/**
 * What `npm run upgrade:connect-es` (scripts/connect-es-upgrade.ts) does to
 * a release as npm ships it, done to a copy of the installed one: the
 * hand-written hunks taken from the patch, applied, and the kept sources'
 * ES2018 compiles written give exactly the installed, patched package. So an
 * upgrade that gets through its checks leaves the patch as complete as it
 * was; a hunk whose lines moved stops it, naming the file.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { pristineConnect } from "../lab/bench/compiled-chains.js";
import { handWrittenHunks, patchedFiles, remakePatchedConnect } from "../scripts/connect-es-retarget/remake.js";
import { retargetSourcesDir, retargetedFiles } from "../scripts/connect-es-retarget/retarget.js";

const root = process.cwd();
const installed = join(root, "node_modules", "@connectrpc", "connect");
const { version } = JSON.parse(readFileSync(join(installed, "package.json"), "utf8")) as { version: string };
const sources = retargetSourcesDir(root, version);
const patch = readFileSync(join(root, "patches", `@connectrpc+connect+${version}.patch`), "utf8");
let scratch: string;

before(() => {
  scratch = mkdtempSync(join(tmpdir(), "connect-es-upgrade-test-"));
});
after(() => rmSync(scratch, { recursive: true, force: true }));

function files(dir: string): Map<string, string> {
  return new Map(
    readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile() && e.name !== ".pristine-stamp")
      .map((e) => [relative(dir, join(e.parentPath, e.name)), readFileSync(join(e.parentPath, e.name), "utf8")]),
  );
}

test("the hand-written hunks are every file's diff but the ESM files the compiles replace whole", () => {
  const hunks = patchedFiles(handWrittenHunks(patch, retargetedFiles(sources)));
  const replaced = retargetedFiles(sources).map((f) => `node_modules/@connectrpc/connect/dist/esm/${f}.js`);
  assert.ok(hunks.length > 0);
  assert.deepEqual(
    hunks.filter((f) => replaced.includes(f)),
    [],
  );
  assert.deepEqual([...hunks, ...replaced].sort(), patchedFiles(patch).sort());
  // Each hand-written fix is carried in both builds.
  const inBuild = (build: string) => hunks.filter((f) => f.includes(`/dist/${build}/`)).map((f) => f.replace(`/dist/${build}/`, "/dist/"));
  assert.deepEqual(inBuild("esm"), inBuild("cjs"));
});

test("remaking the patched package from npm's files, the hunks and the kept sources gives the installed one, file for file", () => {
  pristineConnect(root, scratch);
  const copy = join(scratch, "node_modules", "@connectrpc", "connect");
  assert.notDeepEqual(files(copy), files(installed), "the copy starts as npm ships it");
  remakePatchedConnect(scratch, handWrittenHunks(patch, retargetedFiles(sources)), sources);
  const remade = files(copy);
  const want = files(installed);
  assert.deepEqual([...remade.keys()].sort(), [...want.keys()].sort());
  for (const [f, text] of want) assert.equal(remade.get(f), text, f);
});

test("a hunk whose lines moved in the new release stops the remake, naming the file", () => {
  const dir = mkdtempSync(join(scratch, "moved-"));
  pristineConnect(root, dir);
  const file = join(dir, "node_modules", "@connectrpc", "connect", "dist", "esm", "protocol", "serialization.js");
  writeFileSync(file, readFileSync(file, "utf8").replace("function createMethodSerializationLookup", "function createMethodSerializationLookupMoved"));
  assert.throws(
    () => remakePatchedConnect(dir, handWrittenHunks(patch, retargetedFiles(sources)), undefined),
    /the hand-written hunks do not apply to this release; remake them by hand[\s\S]*dist\/esm\/protocol\/serialization\.js/,
  );
});
