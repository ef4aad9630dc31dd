/**
 * connect-es's async generators run natively (scripts/connect-es-retarget.ts,
 * patches/README.md): the installed ESM files that connect-es ships with
 * TypeScript's ES2017 emulation of async generators are the ES2018 compiles of
 * sources kept in patches/, and those sources are the release's own: compiled
 * for ES2017 they give exactly what npm ships (a copy of the package with the
 * repository's patch reversed, as the bench's plain chain runs it).
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { createAsyncIterable, pipe, transformSerializeEnvelope } from "@connectrpc/connect/protocol";
import { pristineConnect } from "../lab/bench/compiled-chains.js";
import { carriesEmulation, fidelityProblems, retargetProblems, retargetSourcesDir, retargetedFiles } from "../scripts/connect-es-retarget/retarget.js";

const root = process.cwd();
const installed = join(root, "node_modules", "@connectrpc", "connect");
const { version } = JSON.parse(readFileSync(join(installed, "package.json"), "utf8")) as { version: string };
const sources = retargetSourcesDir(root, version);
let scratch: string;
let pristineEsm: string;

before(() => {
  scratch = mkdtempSync(join(tmpdir(), "connect-es-retarget-test-"));
  pristineConnect(root, scratch);
  pristineEsm = join(scratch, "node_modules", "@connectrpc", "connect", "dist", "esm");
});
after(() => rmSync(scratch, { recursive: true, force: true }));

/** The ESM files of a dist/esm that carry TypeScript's emulation of async generators or `for await`. */
function emulating(esmDir: string): string[] {
  return readdirSync(esmDir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(".js"))
    .map((e) => join(e.parentPath, e.name))
    .filter((f) => carriesEmulation(readFileSync(f, "utf8")))
    .map((f) => relative(esmDir, f).replace(/\.js$/, ""))
    .sort();
}

test(`the kept sources are connect-es ${version}'s: compiled for ES2017 they are the files npm ships`, () => {
  assert.deepEqual(fidelityProblems(sources, pristineEsm), []);
});

test("every ESM file npm ships with the emulation has its source kept, and is installed as its ES2018 compile", () => {
  const shipped = emulating(pristineEsm);
  assert.ok(shipped.length > 0, "npm's connect-es carries the emulation (else this patch has nothing left to do)");
  assert.deepEqual(retargetedFiles(sources), shipped);
  assert.deepEqual(retargetProblems(sources, join(installed, "dist", "esm")), []);
  assert.deepEqual(emulating(join(installed, "dist", "esm")), []);
});

test("connect-es's iterables, as the platform runs them, are native async generators and behave as before", async () => {
  const source = createAsyncIterable([1, 2, 3]);
  assert.equal(Object.prototype.toString.call(source), "[object AsyncGenerator]");
  const envelopes = pipe(
    createAsyncIterable([new Uint8Array([7]), new Uint8Array([8, 9])]),
    transformSerializeEnvelope({ serialize: (m: Uint8Array<ArrayBuffer>) => m, parse: (b: Uint8Array) => new Uint8Array(b) }),
  );
  assert.equal(Object.prototype.toString.call(envelopes), "[object AsyncGenerator]");
  const seen: number[][] = [];
  for await (const e of envelopes) seen.push([e.flags, ...e.data]);
  assert.deepEqual(seen, [
    [0, 7],
    [0, 8, 9],
  ]);
});
