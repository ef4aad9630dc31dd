import { readFileSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";

/**
 * connect-es compiles to ES2017 (its tsconfig.base.json), so every async
 * generator and `for await` in its request path ships as TypeScript's
 * emulation (`__asyncGenerator`, `__await`, `__asyncValues`,
 * `__asyncDelegator`): a queue array, a closure and two or three promises per
 * `yield`, where Node's native generators need none of that. The platform's
 * patch replaces the ESM files that carry the emulation with the same
 * sources compiled for ES2018, the first target with native async
 * generators (docs/performance.md, "What the request path does to stay cheap").
 *
 * The sources are kept in patches/connect-es-<version>/src. That they are
 * the release's own is checked, not assumed: compiled for ES2017 they must
 * give npm's files (`fidelityProblems`), blank lines aside (TypeScript drops
 * them; connect-es's build keeps a few).
 */

/** Where the sources for the installed release are kept, and the release they are from. */
export function retargetSourcesDir(root: string, version: string): string {
  return join(root, "patches", `connect-es-${version}`, "src");
}

/** The ESM files (under dist/esm, without ".js") the sources replace: every one whose source is kept. */
export function retargetedFiles(sourcesDir: string): string[] {
  return readdirSync(sourcesDir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts"))
    .map((e) => relative(sourcesDir, join(e.parentPath, e.name)).replace(/\.ts$/, ""))
    .sort();
}

/** One connect-es source compiled as its build compiles it (ES modules, types erased), for `target`. */
export function compileConnectSource(sourcesDir: string, file: string, target: ts.ScriptTarget): string {
  const source = readFileSync(join(sourcesDir, `${file}.ts`), "utf8");
  return ts.transpileModule(source, {
    fileName: `${file}.ts`,
    compilerOptions: { target, module: ts.ModuleKind.ESNext, verbatimModuleSyntax: true, esModuleInterop: false },
  }).outputText;
}

/** Whether a compiled file carries TypeScript's emulation of async generators or `for await`. */
export function carriesEmulation(js: string): boolean {
  return /\b__(asyncGenerator|asyncValues|await|asyncDelegator)\b/.test(js);
}

const withoutBlankLines = (text: string) => text.replace(/^[ \t]*\r?\n/gm, "");

/**
 * Each kept source that, compiled for ES2017, is not the file npm ships in
 * `pristineEsmDir` (a copy of @connectrpc/connect/dist/esm as npm installs
 * it): the sources are not that release's, or TypeScript now emits
 * differently. Empty when every one matches.
 */
export function fidelityProblems(sourcesDir: string, pristineEsmDir: string): string[] {
  return retargetedFiles(sourcesDir).filter(
    (f) =>
      withoutBlankLines(compileConnectSource(sourcesDir, f, ts.ScriptTarget.ES2017)) !==
      withoutBlankLines(readFileSync(join(pristineEsmDir, `${f}.js`), "utf8")),
  );
}

/** Each retargeted file that `esmDir` (the installed dist/esm) does not hold as the ES2018 compile of its source. */
export function retargetProblems(sourcesDir: string, esmDir: string): string[] {
  return retargetedFiles(sourcesDir).filter(
    (f) => compileConnectSource(sourcesDir, f, ts.ScriptTarget.ES2018) !== readFileSync(join(esmDir, `${f}.js`), "utf8"),
  );
}
