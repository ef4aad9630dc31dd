import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, rmdirSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import ts from "typescript";
import { writeAtomically } from "./files.js";
import type { TranspileCache } from "./transpile-cache.js";
import type { Workspace } from "./workspaces.js";

/**
 * What becomes of a file under src/ in dist/: TypeScript is compiled, any
 * other file (JSON, SQL... read at run time next to the code) is copied as
 * it is; unit tests, test helpers (testing/) and declarations are left out.
 */
export function shippedAs(relativePath: string): "compile" | "copy" | undefined {
  const parts = relativePath.split("/");
  const name = parts[parts.length - 1]!;
  if (parts.includes("testing") || /\.(spec|test)\.[cm]?[jt]s$/.test(name) || /\.d\.[cm]?ts$/.test(name)) return undefined;
  return name.endsWith(".ts") ? "compile" : "copy";
}

/** The dist/ path of a shipped src/ file. */
export function outputPath(relativePath: string): string {
  return shippedAs(relativePath) === "compile" ? relativePath.replace(/\.ts$/, ".js") : relativePath;
}

/**
 * Where node goes for each entry of a workspace's "exports": every target
 * except a "types" condition. Built JavaScript imports workspaces through
 * node_modules, where node refuses to run TypeScript, so these must be
 * files under ./dist/.
 */
export function exportProblems(w: Workspace): string[] {
  const targets: string[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === "string") targets.push(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v !== null && typeof v === "object") for (const [k, x] of Object.entries(v)) if (k !== "types") walk(x);
  };
  walk(w.manifest.exports);
  return targets
    .filter((t) => !/^\.\/dist\/.+\.js$/.test(t))
    .map(
      (t) =>
        `${w.dir}/package.json: "exports" sends node to ${t}; built JavaScript cannot load TypeScript from node_modules. ` +
        `Use { ".": { "types": "./src/index.ts", "default": "./dist/index.js" } } (docs/deployment.md)`,
    );
}

export interface CompileResult {
  files: number;
  written: number;
  removed: number;
}

/**
 * One workspace's src/**.ts to dist/**.js (other files copied), file by file (types erased, one
 * output per input, same folder layout, so paths computed from
 * import.meta.url such as `../migrations/` stay right).
 *
 * Transpile-only, on purpose: `tsconfig.json` has isolatedModules and
 * verbatimModuleSyntax, which guarantee that each file compiles alone to
 * what a full program would emit, and the type check is `npm run
 * typecheck` (part of `npm test`). A full program would take a type check
 * of the whole repository on every `npm start`.
 *
 * Safe to run twice at once (npm start while a test builds): a file is
 * written only when its content changes, to a temporary name then renamed,
 * so a reader never sees half a file.
 *
 * With a `cache` (transpile-cache.ts), a source whose output in dist/ is
 * still what it compiled to last time is not transpiled again.
 */
export function compileWorkspace(
  root: string,
  w: Workspace,
  compilerOptions: ts.CompilerOptions,
  cache?: TranspileCache,
  /** The service's src/main.ts is bundled into dist/main.js instead (bundle.ts): not compiled, its output kept. */
  mainBundled = false,
): CompileResult {
  const src = join(root, w.dir, "src");
  const dist = join(root, w.dir, "dist");
  const result: CompileResult = { files: 0, written: 0, removed: 0 };
  if (!existsSync(src)) return result;
  const wanted = new Set<string>();
  const errors: string[] = [];
  for (const e of readdirSync(src, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    const file = join(e.parentPath, e.name);
    const rel = relative(src, file);
    const how = shippedAs(rel);
    if (how === undefined) continue;
    const target = join(dist, outputPath(rel));
    wanted.add(target);
    result.files++;
    if (mainBundled && rel === "main.ts") {
      wanted.add(`${target}.map`);
      continue;
    }
    let output: Buffer;
    if (how === "copy") output = readFileSync(file);
    else {
      const source = readFileSync(file, "utf8");
      if (cache?.isCurrent(relative(root, file), source, target)) continue;
      const out = ts.transpileModule(source, { fileName: file, compilerOptions, reportDiagnostics: true });
      for (const d of out.diagnostics ?? []) errors.push(`${relative(root, file)}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`);
      output = Buffer.from(out.outputText);
      if ((out.diagnostics ?? []).length === 0) cache?.record(relative(root, file), source, output);
    }
    if (existsSync(target) && readFileSync(target).equals(output)) continue;
    mkdirSync(dirname(target), { recursive: true });
    writeAtomically(target, output);
    result.written++;
  }
  if (errors.length > 0) throw new Error(`cannot compile ${w.dir}:\n  ${errors.join("\n  ")}`);
  // Outputs whose source is gone (renamed, deleted) would still be importable.
  if (existsSync(dist)) {
    for (const e of readdirSync(dist, { recursive: true, withFileTypes: true })) {
      const file = join(e.parentPath, e.name);
      if (e.isFile() && !wanted.has(file) && !file.endsWith(".tmp")) {
        rmSync(file, { force: true });
        result.removed++;
      }
    }
    removeEmptyFolders(dist);
  }
  return result;
}

function removeEmptyFolders(dir: string): void {
  for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) removeEmptyFolders(join(dir, e.name));
  if (readdirSync(dir).length === 0) rmdirSync(dir);
}

/**
 * tsconfig.json's options (the ones `npm run typecheck` checks against),
 * for emitting: ES modules as written (the sources import with explicit
 * `.js` extensions, which NodeNext resolution checks).
 */
export function emitOptions(root: string): ts.CompilerOptions {
  const configFile = join(root, "tsconfig.json");
  const read = ts.readConfigFile(configFile, (f) => readFileSync(f, "utf8"));
  if (read.error) throw new Error(`${configFile}: ${ts.flattenDiagnosticMessageText(read.error.messageText, "\n")}`);
  const { options } = ts.convertCompilerOptionsFromJson((read.config as { compilerOptions?: unknown }).compilerOptions ?? {}, root, configFile);
  // transpileModule cannot tell ESM from CommonJS under NodeNext (it has no
  // package.json to read); every workspace is "type": "module".
  return { ...options, noEmit: false, module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler, declaration: false, sourceMap: false };
}
