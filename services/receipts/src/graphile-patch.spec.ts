import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { ConfigError } from "@platform/runtime";
import { checkGraphilePatch, graphilePatchProblems } from "./graphile-patch.js";

const installed = dirname(fileURLToPath(import.meta.resolve("graphile-worker")));

test("the installed graphile-worker carries the three fixes of the patch", () => {
  assert.deepEqual(graphilePatchProblems(), []);
});

test("a graphile-worker without the patch is named, fix by fix: an error in development, a refusal to start in production", (t) => {
  const dir = mkdtempSync(join(tmpdir(), "graphile-patch-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // The installed files with the patch's comments taken out: what an install that skipped patch-package has.
  const strip = (file: string, ...markers: string[]) =>
    writeFileSync(
      join(dir, file),
      markers.reduce((text, m) => text.replaceAll(m, ""), readFileSync(join(installed, file), "utf8")),
    );
  strip("main.js", "graphile/worker#636", "every holdup() is matched by");
  strip("localQueue.js", "patches/README.md): the promise refused");
  const problems = graphilePatchProblems(dir);
  assert.equal(problems.length, 3);
  assert.match(problems[0]!, /not retried/);
  assert.match(problems[1]!, /backpressure/);
  assert.match(problems[2]!, /loses the promise/);
  assert.match(graphilePatchProblems(join(dir, "missing"))[0]!, /cannot be read/);

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
