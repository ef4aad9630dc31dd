import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { ConfigError } from "@platform/runtime";
import { checkGraphilePatch, graphilePatchProblems } from "./graphile-patch.js";

const installed = fileURLToPath(new URL("./main.js", import.meta.resolve("graphile-worker")));

test("the installed graphile-worker carries both fixes of the patch", () => {
  assert.deepEqual(graphilePatchProblems(), []);
});

test("a graphile-worker without the patch is named, fix by fix: an error in development, a refusal to start in production", (t) => {
  const dir = mkdtempSync(join(tmpdir(), "graphile-patch-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // The installed file with the patch's comments taken out: what an install that skipped patch-package has.
  const unpatched = join(dir, "main.js");
  writeFileSync(unpatched, readFileSync(installed, "utf8").replaceAll("graphile/worker#636", "").replaceAll("every holdup() is matched by", ""));
  const problems = graphilePatchProblems(unpatched);
  assert.equal(problems.length, 2);
  assert.match(problems[0]!, /not retried/);
  assert.match(problems[1]!, /backpressure/);
  assert.match(graphilePatchProblems(join(dir, "missing.js"))[0]!, /cannot be read/);

  const logged: string[] = [];
  const logger = { error: (_o: object, m: string) => logged.push(m) } as unknown as Parameters<typeof checkGraphilePatch>[0];
  checkGraphilePatch(logger, {}, problems);
  assert.equal(logged.length, 1);
  assert.match(logged[0]!, /graphile-worker is not patched .*npx patch-package/);
  assert.throws(() => checkGraphilePatch(logger, { NODE_ENV: "production" }, problems), ConfigError);
  // Patched: silent either way.
  checkGraphilePatch(logger, { NODE_ENV: "production" }, []);
  assert.equal(logged.length, 1);
});
