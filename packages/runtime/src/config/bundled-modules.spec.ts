// npm test: own process (it installs module resolution hooks for the whole process)
import { test } from "node:test";
import assert from "node:assert/strict";
import { bundledSpecifiers, reexportSource, shareBundledModules, sharePluginImports } from "./bundled-modules.js";

/** No package of this name exists: only the hooks can resolve it. */
const shared: string = "platform-spec-shared-package";

test("the re-export module names every identifier export and the default, and leaves out names that are not identifiers", () => {
  const source = reexportSource("pkg", { default: 1, Pool: 2, $x: 3, "not-an-identifier": 4 });
  assert.match(source, /^export default ns\.default;$/m);
  assert.match(source, /^export const Pool = ns\["Pool"\];$/m);
  assert.match(source, /^export const \$x = ns\["\$x"\];$/m);
  assert.doesNotMatch(source, /not-an-identifier/);
});

test("not bundled: nothing is shared and no hook is installed; bundled: an import of a shared specifier gets the bundle's instance, others load as usual", async () => {
  assert.deepEqual(bundledSpecifiers(), []);
  sharePluginImports(); // no-op: no bundle shared anything
  await assert.rejects(import(shared), /Cannot find package/);

  const instance = { answer: () => 42 };
  const fallback = { answer: () => 0 };
  shareBundledModules({ [shared]: { default: instance, answer: instance.answer, fallback } });
  assert.deepEqual(bundledSpecifiers(), [shared]);
  sharePluginImports();
  sharePluginImports(); // installed once
  const mod = (await import(shared)) as { default: unknown; answer: () => number };
  assert.equal(mod.default, instance, "the very object the bundle shared");
  assert.equal(mod.answer(), 42);
  // A specifier the bundle does not hold resolves as node would.
  const path = await import("node:path");
  assert.equal(typeof path.join, "function");
});
