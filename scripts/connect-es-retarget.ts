/**
 * The part of patches/@connectrpc+connect+<version>.patch that is made, not
 * written: connect-es's ESM files with async generators, compiled again from
 * their sources for ES2018 so that Node runs them natively
 * (scripts/connect-es-retarget/retarget.ts says why).
 *
 *   node --import tsx scripts/connect-es-retarget.ts           write them into node_modules/@connectrpc/connect/dist/esm
 *   node --import tsx scripts/connect-es-retarget.ts --check   only check that the installed files are those compiles
 *
 * Before writing, the kept sources must compile for ES2017 to exactly what npm
 * ships (a copy of the package with the repository's patch reversed). After
 * writing, `npx patch-package @connectrpc/connect` records the change in the
 * patch, beside the hand-written hunks (patches/README.md).
 * test/connect-es-retarget.test.ts makes both checks on every run.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import ts from "typescript";
import { pristineConnect } from "../lab/bench/compiled-chains.js";
import {
  carriesEmulation,
  compileConnectSource,
  fidelityProblems,
  retargetProblems,
  retargetSourcesDir,
  retargetedFiles,
} from "./connect-es-retarget/retarget.js";

const root = process.cwd();
const installed = join(root, "node_modules", "@connectrpc", "connect");
const { version } = JSON.parse(readFileSync(join(installed, "package.json"), "utf8")) as { version: string };
const sources = retargetSourcesDir(root, version);
const esm = join(installed, "dist", "esm");

// npm's files: the installed ones while they still carry the emulation (the patch's compiles not
// yet written), else a copy of the package with the repository's patch reversed.
const stillAsNpmShips = retargetedFiles(sources).every((f) => carriesEmulation(readFileSync(join(esm, `${f}.js`), "utf8")));
const scratch = mkdtempSync(join(tmpdir(), "connect-es-retarget-"));
try {
  if (!stillAsNpmShips) pristineConnect(root, scratch);
  const unfaithful = fidelityProblems(sources, stillAsNpmShips ? esm : join(scratch, "node_modules", "@connectrpc", "connect", "dist", "esm"));
  if (unfaithful.length > 0) {
    process.stderr.write(
      `connect-es-retarget: these sources do not compile (ES2017) to what npm ships in @connectrpc/connect ${version}: ${unfaithful.join(", ")}\n`,
    );
    process.exit(1);
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

if (process.argv.includes("--check")) {
  const stale = retargetProblems(sources, esm);
  if (stale.length > 0) {
    process.stderr.write(
      `connect-es-retarget: not the ES2018 compile of their source: ${stale.join(", ")} (npm ci applies the patch; or run this script without --check)\n`,
    );
    process.exit(1);
  }
  process.stdout.write(`connect-es-retarget: ${retargetedFiles(sources).length} files of @connectrpc/connect ${version} are their ES2018 compiles\n`);
} else {
  for (const f of retargetedFiles(sources)) writeFileSync(join(esm, `${f}.js`), compileConnectSource(sources, f, ts.ScriptTarget.ES2018));
  process.stdout.write(`connect-es-retarget: wrote ${retargetedFiles(sources).length} files; now run npx patch-package @connectrpc/connect\n`);
}
