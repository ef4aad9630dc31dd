/**
 * `npm run build` (scripts/build.ts): every private workspace the root declares,
 * src/ to dist/, tests left out; exports that send node to TypeScript
 * refused; a second run writes nothing; outputs whose source is gone are
 * removed; a syntax error fails naming the file. On throw-away
 * repositories in a temporary folder, and once on this one (what npm start
 * runs first): every source has its output and the compiled launcher picks
 * compiled services.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import ts from "typescript";
import { compileWorkspace, emitOptions, exportProblems, outputPath, shippedAs } from "../scripts/build/compile.js";
import { TranspileCache } from "../scripts/build/transpile-cache.js";
import { listWorkspaces } from "../scripts/build/workspaces.js";
import { launcherForm, serviceEntry } from "@platform/launcher";

const root = process.cwd();

function repository(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "build-test-"));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

const builtExports = JSON.stringify({ name: "@platform/lib", type: "module", exports: { ".": { types: "./src/index.ts", default: "./dist/index.js" } } });

test("which files ship: sources compiled, other files copied; not tests, test helpers or declarations", () => {
  assert.equal(shippedAs("index.ts"), "compile");
  assert.equal(shippedAs("a/b/deep.ts"), "compile");
  assert.equal(shippedAs("gen/catalogue.json"), "copy");
  assert.equal(shippedAs("index.spec.ts"), undefined);
  assert.equal(shippedAs("x.test.ts"), undefined);
  assert.equal(shippedAs("testing/tcp-proxy.ts"), undefined);
  assert.equal(shippedAs("testing/fixture.json"), undefined);
  assert.equal(shippedAs("types.d.ts"), undefined);
  assert.equal(outputPath("a/b/deep.ts"), "a/b/deep.js");
  assert.equal(outputPath("gen/catalogue.json"), "gen/catalogue.json");
});

test("exports must send node to dist/*.js; types may name the sources", () => {
  const w = (exports: unknown) => ({ dir: "packages/x", manifest: { exports } });
  assert.deepEqual(exportProblems(w({ ".": { types: "./src/index.ts", default: "./dist/index.js" } })), []);
  assert.deepEqual(exportProblems(w(undefined)), [], "a service exports nothing");
  assert.match(exportProblems(w({ ".": "./src/index.ts" }))[0] ?? "", /packages\/x\/package\.json: "exports" sends node to \.\/src\/index\.ts/);
  assert.equal(exportProblems(w({ ".": { import: "./dist/index.js", default: "./src/index.ts" } })).length, 1);
});

test("workspaces come from the root's patterns; other pattern forms are refused", (t) => {
  const dir = repository({
    "package.json": JSON.stringify({ workspaces: ["packages/*", "services/*", "absent/*"] }),
    "packages/b/package.json": "{}",
    "packages/a/package.json": "{}",
    "packages/not-a-package/README.md": "",
    "services/s/package.json": "{}",
  });
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  assert.deepEqual(
    listWorkspaces(dir).map((w) => w.dir),
    ["packages/a", "packages/b", "services/s"],
  );
  writeFileSync(join(dir, "package.json"), JSON.stringify({ workspaces: ["packages/**"] }));
  assert.throws(() => listWorkspaces(dir), /only "<folder>\/\*" is supported/);
});

test("compile: dist mirrors src, types erased; a second run writes nothing; stale outputs go; a syntax error names the file", (t) => {
  const dir = repository({
    "tsconfig.json": readFileSync(join(root, "tsconfig.json"), "utf8"),
    "package.json": JSON.stringify({ workspaces: ["packages/*"] }),
    "packages/lib/package.json": builtExports,
    "packages/lib/src/index.ts": 'import type { Shape } from "./shape.js";\nexport { area } from "./shape.js";\nexport const unit: Shape = { side: 1 };\n',
    "packages/lib/src/shape.ts":
      "export interface Shape { side: number }\nexport class Square { constructor(readonly side: number) {} }\nexport const area = (s: Shape): number => s.side ** 2;\n",
    "packages/lib/src/shape.spec.ts": 'import { test } from "node:test";\n',
    "packages/lib/src/testing/helper.ts": "export const h = 1;\n",
    "packages/lib/src/defaults.json": '{ "side": 2 }\n',
  });
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const [w] = listWorkspaces(dir);
  const options = emitOptions(dir);
  assert.deepEqual(compileWorkspace(dir, w!, options), { files: 3, written: 3, removed: 0 });
  const dist = join(dir, "packages/lib/dist");
  assert.deepEqual(readdirSync(dist, { recursive: true }).sort(), ["defaults.json", "index.js", "shape.js"]);
  assert.equal(readFileSync(join(dist, "defaults.json"), "utf8"), '{ "side": 2 }\n', "a data file is copied as it is");
  const index = readFileSync(join(dist, "index.js"), "utf8");
  assert.doesNotMatch(index, /Shape|import type/, "type-only imports are erased");
  assert.match(index, /export \{ area \} from "\.\/shape\.js";/, "imports stay as written (ESM, .js)");
  assert.match(readFileSync(join(dist, "shape.js"), "utf8"), /this\.side = side/, "parameter properties become assignments");

  const before = statSync(join(dist, "index.js")).mtimeMs;
  assert.deepEqual(compileWorkspace(dir, w!, options), { files: 3, written: 0, removed: 0 });
  assert.equal(statSync(join(dist, "index.js")).mtimeMs, before, "an unchanged output is not rewritten");

  rmSync(join(dir, "packages/lib/src/shape.ts"));
  writeFileSync(join(dir, "packages/lib/src/index.ts"), "export const unit = 1;\n");
  assert.deepEqual(compileWorkspace(dir, w!, options), { files: 2, written: 1, removed: 1 });
  assert.ok(!existsSync(join(dist, "shape.js")), "the output of a deleted source is removed");

  writeFileSync(join(dir, "packages/lib/src/broken.ts"), "export const = ;\n");
  assert.throws(() => compileWorkspace(dir, w!, options), /cannot compile packages\/lib:\n {2}packages\/lib\/src\/broken\.ts: /);
});

test("the transpile cache: an unchanged source is not transpiled again; a changed source, output or compiler option is", (t) => {
  const dir = repository({
    "tsconfig.json": readFileSync(join(root, "tsconfig.json"), "utf8"),
    "package.json": JSON.stringify({ workspaces: ["packages/*"] }),
    "packages/lib/package.json": builtExports,
    "packages/lib/src/index.ts": 'export { area } from "./shape.js";\n',
    "packages/lib/src/shape.ts": "export const area = (side: number): number => side ** 2;\n",
  });
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const [w] = listWorkspaces(dir);
  const options = emitOptions(dir);
  const cacheFile = join(dir, "cache.json");
  const build = (opts = options) => {
    const cache = new TranspileCache(cacheFile, `${ts.version}\n${JSON.stringify(opts)}`);
    const result = compileWorkspace(dir, w!, opts, cache);
    cache.save();
    return { ...result, transpiled: result.files - cache.hits };
  };
  assert.deepEqual(build(), { files: 2, written: 2, removed: 0, transpiled: 2 });
  assert.deepEqual(build(), { files: 2, written: 0, removed: 0, transpiled: 0 }, "nothing changed: nothing transpiled");
  writeFileSync(join(dir, "packages/lib/src/shape.ts"), "export const area = (side: number): number => side * side;\n");
  assert.deepEqual(build(), { files: 2, written: 1, removed: 0, transpiled: 1 }, "the changed source only");
  assert.match(readFileSync(join(dir, "packages/lib/dist/shape.js"), "utf8"), /side \* side/);
  writeFileSync(join(dir, "packages/lib/dist/index.js"), "export const tampered = 1;\n");
  assert.deepEqual(build(), { files: 2, written: 1, removed: 0, transpiled: 1 }, "an output edited by hand is compiled again");
  assert.doesNotMatch(readFileSync(join(dir, "packages/lib/dist/index.js"), "utf8"), /tampered/);
  const es5 = { ...options, target: ts.ScriptTarget.ES5 };
  assert.deepEqual(build(es5), { files: 2, written: 1, removed: 0, transpiled: 2 }, "other compiler options: everything again");
  assert.doesNotMatch(readFileSync(join(dir, "packages/lib/dist/shape.js"), "utf8"), /=>/, "compiled for the new target");
  writeFileSync(cacheFile, "not json");
  assert.deepEqual(build(es5), { files: 2, written: 0, removed: 0, transpiled: 2 }, "a damaged cache is an empty one");
});

test("npm run build on this repository: every shipped source has its output, and nothing else is in dist/", () => {
  const r = spawnSync(process.execPath, ["--import", "tsx", "scripts/build.ts"], { cwd: root, encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^\[build\] \d+ workspaces, \d+ files to dist\//m);
  // Nothing changed since: no file written, no bundle made again.
  const again = spawnSync(process.execPath, ["--import", "tsx", "scripts/build.ts"], { cwd: root, encoding: "utf8" });
  assert.match(again.stdout, /\(0 changed, 0 removed\), 0 of \d+ service bundles made/, again.stdout + again.stderr);
  // The published client builds itself (test/client-package.test.ts).
  for (const w of listWorkspaces(root).filter((x) => x.manifest.private === true)) {
    const src = join(root, w.dir, "src");
    if (!existsSync(src)) continue;
    const expected = readdirSync(src, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => join(e.parentPath, e.name).slice(src.length + 1))
      .filter((f) => shippedAs(f) !== undefined)
      .map(outputPath)
      // A service's main.js is its bundle, with the bundle's source map beside it.
      .concat(w.dir.startsWith("services/") ? ["main.js.map"] : [])
      .sort();
    const dist = join(root, w.dir, "dist");
    const built = readdirSync(dist, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => join(e.parentPath, e.name).slice(dist.length + 1))
      .sort();
    assert.deepEqual(built, expected, w.dir);
  }
  // The compiled launcher starts compiled services; this (tsx) one, sources.
  const probe = spawnSync(
    process.execPath,
    ["--input-type=module", "-e", 'const l = await import("@platform/launcher"); console.log(l.launcherForm, l.serviceEntry("gateway", l.launcherForm));'],
    { cwd: root, encoding: "utf8" },
  );
  assert.equal(probe.status, 0, probe.stderr);
  assert.equal(probe.stdout.trim(), `build ${join(root, "services/gateway/dist/main.js")}`);
  assert.equal(launcherForm, "source");
  assert.equal(serviceEntry("gateway", launcherForm), join(root, "services/gateway/src/main.ts"));
  assert.throws(() => serviceEntry("no-such-service", "build"), /services\/no-such-service\/dist\/main\.js does not exist \(run `npm run build`\)/);
});

/** Starts the bundled gateway with the identity probe plug-in (test/fixtures) and returns its stderr once the probe has spoken. */
async function probeBundledGateway(env: Record<string, string> = {}): Promise<string> {
  const probe = join(root, "test/fixtures/identity-probe-plugin.mjs");
  const child = spawn(process.execPath, [join(root, "services/gateway/dist/main.js")], {
    env: { ...process.env, PLATFORM_PLUGINS: probe, PORT: "0", ADMIN_PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  try {
    await new Promise<void>((resolve, reject) => {
      child.stderr.setEncoding("utf8");
      child.stderr.on("data", (d: string) => {
        err += d;
        if (err.includes("identity-probe sees")) resolve();
      });
      child.once("exit", (code) => reject(new Error(`the gateway exited (${code}) before the plug-in ran:\n${err}`)));
    });
  } finally {
    child.kill("SIGKILL");
  }
  return err;
}

test("npm run build bundles each service into its dist/main.js, and a plug-in loaded into it imports the bundle's own packages", async () => {
  const gateway = readFileSync(join(root, "services/gateway/dist/main.js"), "utf8");
  assert.match(gateway, /shareBundledModules\(\{[^}]*"@platform\/runtime"/, "the bundle shares @platform/runtime with plug-ins");
  assert.doesNotMatch(gateway, /^import .* from "@platform\//m, "no import of a platform package is left to node_modules");
  const plain = await probeBundledGateway();
  assert.match(plain, /identity-probe sees \["identity-probe"\]/);
  assert.match(plain, /at readEnv \(file:\/\/\S+\/services\/gateway\/dist\/main\.js:\d+:\d+\)/, "without source maps: the bundle's line");
  const mapped = await probeBundledGateway({ NODE_OPTIONS: "--enable-source-maps" });
  assert.match(mapped, /at readEnv \(\S*packages\/runtime\/src\/config\/config\.ts:\d+:\d+\)/, "with source maps: the source's line");
});
