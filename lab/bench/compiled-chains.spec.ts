import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pristineConnect } from "./compiled-chains.js";

const root = process.cwd();
// A line each patch adds (patches/README.md): in the repository's install, never in the plain chain's copy.
const marks = [
  ["connect", "dist/esm/implementation.js", "abortedWithoutReason"],
  ["connect", "dist/cjs/protocol/run-call.js", "abortedWithoutReason"],
  ["connect", "dist/esm/protocol/serialization.js", "Patched (see patches/README.md)"],
  ["connect-node", "dist/esm/node-universal-client.js", "rejectThisRace"],
] as const;

// The bench's plain chain stands for connect-es as npm ships it (compiled-chains.ts):
// if the copy kept a patch, or the chain's imports missed the copy, the bench would
// credit the plain chain with the platform's own speed-up.
test("the plain chain's connect-es is the installed one with the repository's patches reversed, and its imports resolve to it", () => {
  // Inside the repository, as the bench's own (.tmp/bench-plain-chain): git must not take it for part of this repository.
  mkdirSync(join(root, ".tmp"), { recursive: true });
  const outDir = mkdtempSync(join(root, ".tmp", "pristine-connect-spec-"));
  try {
    assert.deepEqual(pristineConnect(root, outDir), ["connect", "connect-node"]);
    for (const [name, file, mark] of marks) {
      assert.ok(
        readFileSync(join(root, "node_modules", "@connectrpc", name, file), "utf8").includes(mark),
        `the repository's @connectrpc/${name} is patched (${file})`,
      );
      assert.ok(
        !readFileSync(join(outDir, "node_modules", "@connectrpc", name, file), "utf8").includes(mark),
        `the copy of @connectrpc/${name} is not (${file})`,
      );
    }
    // Where the compiled plain chain's entries live (compilePlainChain keeps the repository's layout).
    const entryDir = join(outDir, "lab", "plain-chain");
    mkdirSync(entryDir, { recursive: true });
    const resolveFromChain = createRequire(join(entryDir, "pricing.js")).resolve;
    for (const name of ["connect", "connect-node"]) {
      assert.ok(
        resolveFromChain(`@connectrpc/${name}`).startsWith(join(outDir, "node_modules", "@connectrpc", name)),
        `@connectrpc/${name} resolves to the copy`,
      );
    }
    assert.deepEqual(pristineConnect(root, outDir), [], "made once: a second call with the same patches copies nothing");
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
});
