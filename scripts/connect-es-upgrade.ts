/**
 * `npm run upgrade:connect-es -- <version> [--sources <dir>]`: moves the
 * platform to another connect-es release in one step, patch included
 * (patches/README.md):
 *
 * 1. pins @connectrpc/connect, connect-node and connect-web to <version> in
 *    every package.json and installs them as npm ships them;
 * 2. takes the release's sources of every ESM file that still carries
 *    TypeScript's emulation of async generators (from the release's tag on
 *    GitHub, or `--sources`: a connect-es checkout's packages/connect/src)
 *    into patches/connect-es-<version>/src, and checks that they are the
 *    release's (compiled for ES2017 they give npm's files);
 * 3. applies the hand-written hunks of the old patches (git apply names a
 *    hunk whose lines moved: remake that one by hand, then run
 *    `npx patch-package @connectrpc/connect`) and writes the ES2018 compiles;
 * 4. records the new patches with patch-package and removes the old
 *    version's patches and sources.
 *
 * Then run test/connect-es-retarget.test.ts and the tests patches/README.md
 * lists. A release built for ES2018 or later carries no emulation: step 2
 * keeps no source, and the patch holds the hunks only.
 */
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { pristineConnect } from "../lab/bench/compiled-chains.js";
import { listWorkspaces } from "./build/workspaces.js";
import { connectPackages, handWrittenHunks, remakePatchedConnect } from "./connect-es-retarget/remake.js";
import { carriesEmulation, fidelityProblems, retargetProblems, retargetSourcesDir, retargetedFiles } from "./connect-es-retarget/retarget.js";

const root = process.cwd();
function fail(message: string): never {
  process.stderr.write(`upgrade:connect-es: ${message}\n`);
  process.exit(1);
}
const say = (line: string) => process.stdout.write(`upgrade:connect-es: ${line}\n`);

const args = process.argv.slice(2);
const [version] = args.filter((a, i) => !a.startsWith("--") && args[i - 1] !== "--sources");
const sourcesFlag = args.includes("--sources") ? args[args.indexOf("--sources") + 1] : undefined;
if (!version || !/^\d+\.\d+\.\d+$/.test(version))
  fail("usage: npm run upgrade:connect-es -- <version, e.g. 2.4.0> [--sources <connect-es checkout>/packages/connect/src]");

function run(command: string, commandArgs: string[]): void {
  const r = spawnSync(command, commandArgs, { cwd: root, stdio: "inherit" });
  if (r.status !== 0) fail(`${command} ${commandArgs.join(" ")} failed (exit ${r.status ?? r.signal})`);
}

const installed = (name: string) => (JSON.parse(readFileSync(join(root, "node_modules", name, "package.json"), "utf8")) as { version: string }).version;
const old = installed("@connectrpc/connect");
const oldSources = retargetSourcesDir(root, old);
const oldPatch = (pkg: string) => join(root, "patches", `@connectrpc+${pkg}+${old}.patch`);
const hunks = handWrittenHunks(readFileSync(oldPatch("connect"), "utf8"), existsSync(oldSources) ? retargetedFiles(oldSources) : []);
const nodeHunks = existsSync(oldPatch("connect-node")) ? readFileSync(oldPatch("connect-node"), "utf8") : "";

// 1. The pins, everywhere, and npm's files (no postinstall: the old patches would not apply).
for (const file of ["package.json", ...listWorkspaces(root).map((w) => join(w.dir, "package.json"))]) {
  const text = readFileSync(join(root, file), "utf8");
  let next = text;
  for (const name of connectPackages) next = next.replace(new RegExp(`("${name}": )"[^"]+"`, "g"), `$1"${version}"`);
  if (next !== text) writeFileSync(join(root, file), next);
}
run("npm", ["install", "--ignore-scripts", "--no-audit", "--no-fund"]);
if (installed("@connectrpc/connect") !== version) fail(`npm installed @connectrpc/connect ${installed("@connectrpc/connect")}, not ${version}`);
// npm's files exactly, also when <version> is the installed one (then this remakes the patches): the packages with their patches reversed.
const scratch = mkdtempSync(join(tmpdir(), "connect-es-upgrade-"));
for (const pkg of pristineConnect(root, scratch)) {
  rmSync(join(root, "node_modules", "@connectrpc", pkg), { recursive: true, force: true });
  cpSync(join(scratch, "node_modules", "@connectrpc", pkg), join(root, "node_modules", "@connectrpc", pkg), { recursive: true });
  rmSync(join(root, "node_modules", "@connectrpc", pkg, ".pristine-stamp"), { force: true });
}

// 2. The release's sources of the files that carry the emulation.
const esm = join(root, "node_modules", "@connectrpc", "connect", "dist", "esm");
const emulating = readdirSync(esm, { recursive: true, withFileTypes: true })
  .filter((e) => e.isFile() && e.name.endsWith(".js") && carriesEmulation(readFileSync(join(e.parentPath, e.name), "utf8")))
  .map((e) => relative(esm, join(e.parentPath, e.name)).replace(/\.js$/, ""))
  .sort();
const sources = retargetSourcesDir(root, version);
try {
  let from = sourcesFlag;
  if (from === undefined && emulating.length > 0) {
    const url = `https://codeload.github.com/connectrpc/connect-es/tar.gz/refs/tags/v${version}`;
    say(`fetching ${url}`);
    const res = await fetch(url);
    if (!res.ok) fail(`${url}: HTTP ${res.status}; give a checkout's sources with --sources`);
    writeFileSync(join(scratch, "release.tar.gz"), Buffer.from(await res.arrayBuffer()));
    run("tar", ["-xzf", join(scratch, "release.tar.gz"), "-C", scratch]);
    from = join(scratch, `connect-es-${version}`, "packages", "connect", "src");
  }
  // Gathered aside first: --sources may name the kept sources themselves.
  const taken = join(scratch, "src");
  for (const f of emulating) {
    const source = join(from!, `${f}.ts`);
    if (!existsSync(source)) fail(`${source} is missing: not connect-es ${version}'s packages/connect/src?`);
    mkdirSync(dirname(join(taken, `${f}.ts`)), { recursive: true });
    cpSync(source, join(taken, `${f}.ts`));
  }
  rmSync(sources, { recursive: true, force: true });
  if (emulating.length > 0) cpSync(taken, sources, { recursive: true });
  const unfaithful = emulating.length > 0 ? fidelityProblems(sources, esm) : [];
  if (unfaithful.length > 0) fail(`these sources do not compile (ES2017) to what npm ships in ${version}: ${unfaithful.join(", ")}`);
  say(`${emulating.length} ESM files carry the emulation; their sources are in ${relative(root, sources)}`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

// 3. The hand-written hunks on the new files, then the compiles.
try {
  remakePatchedConnect(root, hunks, existsSync(sources) ? sources : undefined);
} catch (e) {
  fail(e instanceof Error ? e.message : String(e));
}
if (nodeHunks !== "") {
  const r = spawnSync("git", ["apply", "--whitespace=nowarn", oldPatch("connect-node")], {
    cwd: root,
    encoding: "utf8",
    env: { ...process.env, GIT_DIR: join(tmpdir(), "no-repository") },
  });
  if (r.status !== 0)
    fail(`the connect-node hunk does not apply to ${version}; remake it by hand, then npx patch-package @connectrpc/connect-node:\n${r.stderr}`);
}

// 4. The new patches, recorded; the old version's files gone.
run("npx", ["patch-package", "@connectrpc/connect"]);
if (nodeHunks !== "") run("npx", ["patch-package", "@connectrpc/connect-node"]);
if (old !== version) {
  for (const pkg of ["connect", "connect-node"]) rmSync(oldPatch(pkg), { force: true });
  rmSync(dirname(oldSources), { recursive: true, force: true });
}
const stale = existsSync(sources) ? retargetProblems(sources, esm) : [];
if (stale.length > 0) fail(`not the ES2018 compiles after recording: ${stale.join(", ")}`);
say(`connect-es ${old} -> ${version}: patches recorded; now run node --import tsx --test test/connect-es-retarget.test.ts and the tests in patches/README.md`);
