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
 *   (`from: "build"`).
 * - The plain chain: its service entries (lab/plain-chain/<name>.ts and
 *   what they import) compiled by tsc to `.tmp/bench-plain-chain/`, keeping
 *   the repository's layout (so `../../services/orders/src/...` still
 *   resolves) and the repository's node_modules above it (so
 *   `@platform/proto` resolves to its dist/, as for the platform). The
 *   plain chain's starter runs them from there (startPlainChain's
 *   `compiledDir`).
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { plainServiceNames } from "../plain-chain/start-plain-chain.js";

/** Where the plain chain's compiled entries go (under .tmp/, which git ignores). */
export function plainChainBuildDir(root = process.cwd()): string {
  return join(root, ".tmp", "bench-plain-chain");
}

function run(what: string, args: string[]): void {
  const r = spawnSync(process.execPath, args, { stdio: "inherit" });
  if (r.status !== 0) throw new Error(`bench: ${what} failed (exit ${r.status ?? r.signal})`);
}

/**
 * Builds the platform (`npm run build`) and compiles the plain chain;
 * returns the directory the plain chain's entries were compiled into
 * (`<dir>/lab/plain-chain/<name>.js`).
 */
export function buildChains(log: (line: string) => void, root = process.cwd()): string {
  const started = performance.now();
  run("npm run build", ["--import", "tsx", join(root, "scripts", "build.ts")]);
  const outDir = plainChainBuildDir(root);
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const tsconfig = join(outDir, "tsconfig.json");
  writeFileSync(
    tsconfig,
    JSON.stringify({
      extends: relative(outDir, join(root, "tsconfig.json")),
      // The entries and what they import by relative path; the workspaces
      // (@platform/*) come from node_modules, i.e. their dist/ at run time.
      files: plainServiceNames.map((name) => relative(outDir, join(root, "lab", "plain-chain", `${name}.ts`))),
      include: [],
      compilerOptions: { noEmit: false, noCheck: true, outDir: ".", rootDir: relative(outDir, root), paths: {}, declaration: false, sourceMap: false },
    }),
  );
  run("compiling the plain chain", [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", tsconfig]);
  log(`built: the platform (dist/) and the plain chain (${relative(root, outDir)}) in ${Math.round(performance.now() - started)} ms`);
  return outDir;
}
