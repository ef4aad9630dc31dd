/**
 * Both chains run from compiled JavaScript in the bench, as `npm start` and
 * the image run the platform: tsx's esbuild transform keeps function names
 * by wrapping every named closure in `__name()`, and a closure made per
 * request pays it per request (0.5-2.5 % of a service's CPU in the
 * profiles, more on the platform, which makes more closures per request;
 * docs/performance.md).
 *
 * - The platform: `npm run build` (scripts/build.ts: every workspace's src/
 *   to dist/), then the launcher starts each service's dist/main.js
 *   (`from: "build"`). A caller that has just built (`npm test` does,
 *   before any test file) skips it.
 * - The plain chain: its service entries (lab/plain-chain/<name>.ts) and
 *   every file they import by relative path, types stripped (node's
 *   stripTypeScriptTypes: the files use erasable syntax only and already
 *   import the `.js` names written here, as lab/naive/compiled-plugin.ts
 *   does for the naive plug-in) to `.tmp/bench-plain-chain/`, keeping the
 *   repository's layout (so `../../services/orders/src/...` still
 *   resolves) and the repository's node_modules above it (so
 *   `@platform/proto` resolves to its dist/, as for the platform). The
 *   plain chain's starter runs them from there (startPlainChain's
 *   `compiledDir`). A few milliseconds, where tsc took 1.5 CPU seconds
 *   to load the program.
 * - connect-es as npm ships it, for the plain chain: the repository's
 *   patches to @connectrpc/connect and connect-node (patches/README.md)
 *   include one that takes an allocation off every call, and the plain
 *   chain stands for what a team gets without this platform. So
 *   `.tmp/bench-plain-chain/node_modules/@connectrpc/` holds copies with
 *   those patches reversed (`pristineConnect`), which the compiled plain
 *   chain's imports resolve to before the repository's node_modules.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { stripTypeScriptTypes } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { plainServiceNames } from "../plain-chain/start-plain-chain.js";

/** Where the plain chain's compiled entries go (under .tmp/, which git ignores). */
export function plainChainBuildDir(root = process.cwd()): string {
  return join(root, ".tmp", "bench-plain-chain");
}

function run(what: string, args: string[]): void {
  const r = spawnSync(process.execPath, args, { stdio: "inherit" });
  if (r.status !== 0) throw new Error(`bench: ${what} failed (exit ${r.status ?? r.signal})`);
}

/** The relative specifiers a module imports or re-exports (static and dynamic). */
function relativeImports(source: string): string[] {
  return [...source.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)["'](\.{1,2}\/[^"']+)["']/g)].map((m) => m[1]!);
}

/**
 * The plain chain's entries and everything they import by relative path,
 * types stripped, to `outDir` under the same relative paths. Each file is
 * written by rename, so that a chain starting meanwhile never reads half
 * a file.
 */
export function compilePlainChain(root: string, outDir: string): number {
  const pending = plainServiceNames.map((name) => join(root, "lab", "plain-chain", `${name}.ts`));
  const done = new Set<string>();
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (done.has(file)) continue;
    done.add(file);
    const js = stripTypeScriptTypes(readFileSync(file, "utf8"));
    for (const spec of relativeImports(js)) pending.push(resolve(dirname(file), spec.replace(/\.js$/, ".ts")));
    const target = join(outDir, relative(root, file)).replace(/\.ts$/, ".js");
    mkdirSync(dirname(target), { recursive: true });
    const temporary = `${target}.${process.pid}.tmp`;
    writeFileSync(temporary, js);
    renameSync(temporary, target);
  }
  return done.size;
}

/** The connect-es packages the repository patches (patches/@connectrpc+<name>+<version>.patch). */
const patchedConnectPackages = ["connect", "connect-node"] as const;

/**
 * Copies of @connectrpc/connect and connect-node under `outDir`'s
 * node_modules with the repository's patches reversed: what `npm install`
 * gives everyone else. A copy is made again only when its patch changed
 * (a stamp in the copy); each is made in a temporary directory and renamed
 * into place, so a chain starting meanwhile never sees half of one.
 * Returns the packages (re)made.
 */
export function pristineConnect(root: string, outDir: string): string[] {
  const made: string[] = [];
  for (const name of patchedConnectPackages) {
    const installed = join(root, "node_modules", "@connectrpc", name);
    const { version } = JSON.parse(readFileSync(join(installed, "package.json"), "utf8")) as { version: string };
    const patchFile = join(root, "patches", `@connectrpc+${name}+${version}.patch`);
    const patch = existsSync(patchFile) ? readFileSync(patchFile) : Buffer.alloc(0);
    const stamp = createHash("sha256").update(version).update(patch).digest("hex");
    const target = join(outDir, "node_modules", "@connectrpc", name);
    const stampFile = join(target, ".pristine-stamp");
    if (existsSync(stampFile) && readFileSync(stampFile, "utf8") === stamp) continue;
    mkdirSync(outDir, { recursive: true });
    const scratch = mkdtempSync(join(outDir, ".pristine-"));
    try {
      const copy = join(scratch, "node_modules", "@connectrpc", name);
      cpSync(installed, copy, { recursive: true });
      if (patch.length > 0) {
        // patch-package writes git diffs against a/node_modules/...: applied from `scratch`, they
        // reach the copy. git must not take `scratch` for part of this repository (it would skip
        // every path outside it, silently): no repository is looked for above it. The forward
        // check after proves the copy is as before the patch.
        const git = (args: string[]) =>
          spawnSync("git", args, { cwd: scratch, encoding: "utf8", env: { ...process.env, GIT_CEILING_DIRECTORIES: dirname(scratch) } });
        const reversed = git(["apply", "--reverse", patchFile]);
        const check = reversed.status === 0 ? git(["apply", "--check", patchFile]) : reversed;
        if (check.status !== 0) {
          throw new Error(`bench: reversing ${relative(root, patchFile)} on a copy of @connectrpc/${name} failed: ${check.stderr || check.error?.message}`);
        }
      }
      writeFileSync(join(copy, ".pristine-stamp"), stamp);
      mkdirSync(dirname(target), { recursive: true });
      rmSync(target, { recursive: true, force: true });
      renameSync(copy, target);
      made.push(name);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }
  return made;
}

/**
 * Builds the platform (`npm run build`, unless `platformBuilt`) and
 * compiles the plain chain; returns the directory the plain chain's
 * entries were compiled into (`<dir>/lab/plain-chain/<name>.js`).
 */
export function buildChains(log: (line: string) => void, opts: { root?: string; platformBuilt?: boolean } = {}): string {
  const root = opts.root ?? process.cwd();
  const started = performance.now();
  if (!opts.platformBuilt) run("npm run build", ["--import", "tsx", join(root, "scripts", "build.ts")]);
  const outDir = plainChainBuildDir(root);
  const files = compilePlainChain(root, outDir);
  const pristine = pristineConnect(root, outDir);
  log(
    `built: ${opts.platformBuilt ? "the platform's dist/ as found (built by the caller), " : "the platform (dist/), "}` +
      `the plain chain (${files} files to ${relative(root, outDir)}${pristine.length > 0 ? `, unpatched ${pristine.map((n) => `@connectrpc/${n}`).join(" and ")}` : ""}) in ${Math.round(performance.now() - started)} ms`,
  );
  return outDir;
}
