import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import * as path from "node:path";
import { createRequire } from "node:module";
import { pino } from "pino";
import { parseTimeout as parseConnectTimeout } from "@connectrpc/connect/protocol-connect";
import { parseTimeout as parseGrpcTimeout } from "@connectrpc/connect/protocol-grpc";
import { checkConnectPatch, connectPatchProblems } from "./connect-compat.js";
import { ConfigError } from "../config/config.js";
import { createRequestContext, maxTimeoutMs, timeoutRefusal } from "./request-context.js";

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
    const patches = readdirSync(new URL("../../../../patches/", import.meta.url)).filter((f) => f.startsWith("@connectrpc+connect+"));
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

// Item 6: serve() parses the timeout header itself and hides it from
// connect-node (connect-adapter.ts), so the request gate writes the refusal
// connect-node wrote. Fails the day a release words it differently or
// starts accepting what it refused.
describe("a deadline Connect would refuse is refused in Connect's words (connect-adapter.ts)", () => {
  const cases: [protocol: "grpc" | "connect", header: "grpc-timeout" | "connect-timeout-ms", values: string[]][] = [
    ["grpc", "grpc-timeout", ["abc", "1.5S", "5000", "-1S", "100000000H", "99999999H", "1x", "S", "5 S", "250m", "999u", "3000000000n", "0m"]],
    ["connect", "connect-timeout-ms", ["soon", "-1", "1e3", "99999999999", "9999999999", "2147483648", "2147483647", "0", "5000"]],
  ];
  for (const [protocol, header, values] of cases) {
    test(`${header}, ${protocol} protocol`, () => {
      const parse = protocol === "grpc" ? parseGrpcTimeout : parseConnectTimeout;
      for (const value of values) {
        const context = createRequestContext({
          header: (name) => (name === header ? value : undefined),
          procedure: "/x",
          arrivedAt: 0,
          deadline: { defaultMs: 1000, maxMs: 30_000 },
          trustCaller: true,
        });
        context.dispose();
        const ours = timeoutRefusal(context, protocol);
        const connects = parse(value, maxTimeoutMs).error;
        assert.deepEqual([ours?.code, ours?.rawMessage], [connects?.code, connects?.rawMessage], `${header}: ${value}`);
      }
    });
  }
});
