import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import * as path from "node:path";
import { createRequire } from "node:module";
import { pino } from "pino";
import { checkConnectPatch, connectPatchProblems } from "./connect-compat.js";
import { ConfigError } from "./config.js";

// Fails the day patches/@connectrpc+connect+<version>.patch no longer applies
// (a new release, an install that skipped postinstall): each patched behaviour,
// exercised directly in the installed connect-es.
describe("connect-es, as patched (patches/README.md)", () => {
  test("the patch in patches/ is written for the installed release", () => {
    const require = createRequire(import.meta.url);
    let dir = path.dirname(require.resolve("@connectrpc/connect"));
    while (!existsSync(path.join(dir, "package.json")) || !/"name": "@connectrpc\/connect"/.test(readFileSync(path.join(dir, "package.json"), "utf8")))
      dir = path.dirname(dir);
    const { version } = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as { version: string };
    const patches = readdirSync(new URL("../../../patches/", import.meta.url)).filter((f) => f.startsWith("@connectrpc+connect+"));
    assert.deepEqual(patches, [`@connectrpc+connect+${version}.patch`]);
  });

  test("both patched behaviours are in force", () => {
    assert.deepEqual(connectPatchProblems(), []);
  });

  test("an unpatched install refuses to start in production and logs an error elsewhere", () => {
    const lines: string[] = [];
    const logger = pino({ level: "info" }, { write: (l: string) => void lines.push(l) });
    const problems = ["grpc-message is not encoded per the gRPC spec"];
    assert.throws(
      () => checkConnectPatch(logger, { NODE_ENV: "production" }, problems),
      (e: unknown) => e instanceof ConfigError && /not patched.*grpc-message.*npx patch-package/s.test(e.message),
    );
    assert.doesNotThrow(() => checkConnectPatch(logger, {}, problems));
    assert.equal(lines.length, 1);
    const line = JSON.parse(lines[0]!) as { level: number; msg: string };
    assert.equal(line.level, 50, "logged at error level");
    assert.match(line.msg, /@connectrpc\/connect is not patched/);
    lines.length = 0;
    checkConnectPatch(logger, { NODE_ENV: "production" }); // the installed one: patched, silent
    assert.equal(lines.length, 0);
  });
});
