/**
 * `npm run build` (also run by `npm start` first, and by the Dockerfile):
 * every workspace's src/ compiled to dist/ (JavaScript, no tests), which is
 * what `npm start` and the image run, and what `npm test`'s platforms run
 * (it builds first, docs/testing.md); the lab keeps running the TypeScript
 * sources through tsx (docs/deployment.md).
 *
 *   npm run build
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { bundleService, isBundledService } from "./build/bundle.js";
import { compileWorkspace, emitOptions, exportProblems } from "./build/compile.js";
import { TranspileCache } from "./build/transpile-cache.js";
import { listWorkspaces } from "./build/workspaces.js";

const root = process.cwd();
const started = performance.now();
try {
  const workspaces = listWorkspaces(root);
  const problems = workspaces.flatMap(exportProblems);
  if (problems.length > 0) throw new Error(problems.join("\n"));
  const options = emitOptions(root);
  const cache = TranspileCache.forRepository(root, ts.version, options);
  let files = 0;
  let written = 0;
  let removed = 0;
  const services = workspaces.filter((w) => isBundledService(w) && existsSync(join(root, w.dir, "src/main.ts")));
  // A published library (packages/client) is built by its own `build` script, with its declarations.
  for (const w of workspaces.filter((x) => x.manifest.private === true)) {
    const r = compileWorkspace(root, w, options, cache, services.includes(w));
    files += r.files;
    written += r.written;
    removed += r.removed;
  }
  cache.save();
  const bundled = (await Promise.all(services.map((w) => bundleService(root, w)))).filter((b) => b.written).length;
  process.stdout.write(
    `[build] ${workspaces.length} workspaces, ${files} files to dist/ (${written} changed, ${removed} removed), ${bundled} of ${services.length} service bundles made, in ${Math.round(performance.now() - started)} ms\n`,
  );
} catch (e) {
  process.stderr.write(`[build] failed: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
}
