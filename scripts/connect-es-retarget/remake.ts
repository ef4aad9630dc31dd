import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import ts from "typescript";
import { compileConnectSource, retargetedFiles } from "./retarget.js";

/** The packages an upgrade moves together: one release, pinned exactly everywhere. */
export const connectPackages = ["@connectrpc/connect", "@connectrpc/connect-node", "@connectrpc/connect-web"] as const;

/** One file's diff in a patch-package patch (`diff --git a/node_modules/<package>/<file> ...` up to the next one). */
function fileDiffs(patch: string): { file: string; text: string }[] {
  return patch
    .split(/^(?=diff --git )/m)
    .filter((d) => d.startsWith("diff --git "))
    .map((text) => ({ file: /^diff --git a\/(\S+)/.exec(text)![1]!, text }));
}

/**
 * The hand-written hunks of the connect-es patch: every file's diff except
 * the ESM files it replaces whole with their ES2018 compiles (`retargeted`,
 * e.g. "protocol/async-iterable"), which are remade from their sources
 * rather than carried over to another release.
 */
export function handWrittenHunks(patch: string, retargeted: readonly string[]): string {
  const replaced = new Set(retargeted.map((f) => `node_modules/@connectrpc/connect/dist/esm/${f}.js`));
  return fileDiffs(patch)
    .filter((d) => !replaced.has(d.file))
    .map((d) => d.text)
    .join("");
}

/** The files a patch changes, relative to node_modules' parent (`node_modules/@connectrpc/connect/dist/...`). */
export function patchedFiles(patch: string): string[] {
  return fileDiffs(patch).map((d) => d.file);
}

/**
 * Makes `root`'s node_modules/@connectrpc/connect, as npm installed it, into
 * the patched package: the hand-written hunks applied (git apply, which
 * refuses a hunk whose lines moved and names it), then every kept source's
 * ES2018 compile written over its ESM file (none without `sourcesDir`: a
 * release that ships no emulation). Throws with git's message when
 * a hunk does not apply: remake that one by hand in the new release.
 */
export function remakePatchedConnect(root: string, hunks: string, sourcesDir: string | undefined): void {
  if (hunks.trim() !== "") {
    const scratch = mkdtempSync(join(tmpdir(), "connect-es-hunks-"));
    try {
      const file = join(scratch, "hunks.patch");
      writeFileSync(file, hunks);
      // git must not take `root` for part of an enclosing repository whose ignore rules would skip node_modules.
      const r = spawnSync("git", ["apply", "--whitespace=nowarn", file], {
        cwd: root,
        encoding: "utf8",
        env: { ...process.env, GIT_CEILING_DIRECTORIES: dirname(root), GIT_DIR: join(scratch, "no-repository") },
      });
      if (r.status !== 0) throw new Error(`the hand-written hunks do not apply to this release; remake them by hand (patches/README.md):\n${r.stderr}`);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }
  if (sourcesDir === undefined) return;
  const esm = join(root, "node_modules", "@connectrpc", "connect", "dist", "esm");
  for (const f of retargetedFiles(sourcesDir)) writeFileSync(join(esm, `${f}.js`), compileConnectSource(sourcesDir, f, ts.ScriptTarget.ES2018));
}
