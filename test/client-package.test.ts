/**
 * @platform/client as a package outside this repository would get it: its
 * generated code is @platform/proto's public API only, it builds to
 * JavaScript with type declarations, plain node (no TypeScript loader)
 * imports it, `npm pack` ships exactly that, and the examples type-check
 * against the declarations.
 */
import { before, test } from "node:test";
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import { buildClientPackage } from "@platform/test-support";

const run = promisify(execFile);
before(buildClientPackage);

function files(dir: string): Map<string, string> {
  return new Map(
    readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => [relative(dir, join(e.parentPath, e.name)), readFileSync(join(e.parentPath, e.name), "utf8")]),
  );
}

test("the client compiles the public API as @platform/proto generates it, and nothing internal; the repository holds it once", () => {
  const copied = files("packages/client/src/gen");
  assert.deepEqual([...copied.keys()].sort(), ["checkout/v1/checkout_pb.ts"]);
  for (const [name, text] of copied) assert.equal(text, readFileSync(join("packages/proto/src/gen", name), "utf8"), `${name} is not @platform/proto's`);
  // The copy is the build's (packages/client/build.mjs), never committed: `npm run generate` writes one place.
  assert.equal(execFileSync("git", ["ls-files", "packages/client/src/gen"], { encoding: "utf8" }), "");
});

test("plain node imports the built package: the service descriptor and its message schemas", async () => {
  const script = [
    'const m = await import("@platform/client");',
    "console.log(JSON.stringify({ service: m.CheckoutService.typeName, methods: m.CheckoutService.methods.map((x) => [x.name, x.idempotency]), header: m.idempotencyKeyHeader, schema: m.PlaceOrderRequestSchema.typeName }));",
  ].join("\n");
  // process.execPath with no --import: no TypeScript anywhere.
  const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script]);
  assert.deepEqual(JSON.parse(stdout), {
    service: "checkout.v1.CheckoutService",
    methods: [
      ["ListProducts", 1],
      ["PlaceOrder", 2],
      ["GetOrder", 1],
      ["WatchOrder", 1],
    ],
    header: "Idempotency-Key",
    schema: "checkout.v1.PlaceOrderRequest",
  });
});

test("npm pack ships the JavaScript, the declarations and the README, no sources", async () => {
  const { stdout } = await run("npm", ["pack", "--dry-run", "--json", "--workspace", "@platform/client"]);
  const [pack] = JSON.parse(stdout) as { name: string; files: { path: string }[] }[];
  assert.equal(pack?.name, "@platform/client");
  assert.deepEqual(pack.files.map((f) => f.path).sort(), [
    "README.md",
    "dist/gen/checkout/v1/checkout_pb.js",
    "dist/index.js",
    "dist/watch-order.js",
    "package.json",
    "types/gen/checkout/v1/checkout_pb.d.ts",
    "types/index.d.ts",
    "types/watch-order.d.ts",
  ]);
  const manifest = JSON.parse(readFileSync("packages/client/package.json", "utf8")) as { private?: boolean; exports: Record<string, Record<string, string>> };
  assert.equal(manifest.private, undefined, "publishable");
  assert.deepEqual(manifest.exports["."], { types: "./types/index.d.ts", default: "./dist/index.js" });
});

test("the examples type-check against the package's declarations", async () => {
  await run(process.execPath, ["node_modules/typescript-7/bin/tsc", "--noEmit", "-p", "examples/tsconfig.json"]);
});
