/**
 * @platform/client as a package outside this repository would get it: its
 * generated code is @platform/proto's public API and google.rpc error
 * details only (with the validation and details modules it shares with the
 * servers), it builds to
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

test("the client compiles the public API and the error details as @platform/proto generates them, with its validation and details modules, and nothing internal; the repository holds them once", () => {
  const copied = files("packages/client/src/gen");
  assert.deepEqual([...copied.keys()].sort(), ["checkout/v1/checkout_pb.ts", "google/rpc/error_details_pb.ts", "google/rpc/status_pb.ts"]);
  for (const [name, text] of copied) assert.equal(text, readFileSync(join("packages/proto/src/gen", name), "utf8"), `${name} is not @platform/proto's`);
  const shared = ["error-details.ts", "validation.ts"];
  for (const name of shared) {
    assert.equal(
      readFileSync(join("packages/client/src", name), "utf8"),
      readFileSync(join("packages/proto/src", name), "utf8"),
      `${name} is not @platform/proto's`,
    );
  }
  // The copies are the build's (packages/client/build.mjs), never committed: `npm run generate` writes one place.
  const committed = ["packages/client/src/gen", ...shared.map((name) => `packages/client/src/${name}`)];
  assert.equal(execFileSync("git", ["ls-files", ...committed], { encoding: "utf8" }), "");
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

test("plain node: validateBeforeSending() refuses a request that breaks a declared rule before it is sent, with the server's BadRequest", async () => {
  const script = [
    'const m = await import("@platform/client");',
    'const { createClient, createRouterTransport, ConnectError } = await import("@connectrpc/connect");',
    // A transport with no service behind it: a request that got through would be UNIMPLEMENTED.
    "const client = createClient(m.CheckoutService, createRouterTransport(() => {}, { transport: { interceptors: [m.validateBeforeSending()] } }));",
    'const err = await client.placeOrder({ customerId: "c-1", items: [{ sku: "MUG-CERAMIC", quantity: 0 }] }).then(() => undefined, (e) => ConnectError.from(e));',
    "console.log(JSON.stringify({ code: err?.code, reason: m.refusalReason(err), fields: err?.findDetails(m.BadRequestSchema).flatMap((b) => b.fieldViolations.map((v) => v.field)) }));",
  ].join("\n");
  const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script]);
  assert.deepEqual(JSON.parse(stdout), { code: 3, reason: "INVALID_REQUEST", fields: ["items[0].quantity"] });
});

test("npm pack ships the JavaScript, the declarations and the README, no sources", async () => {
  const { stdout } = await run("npm", ["pack", "--dry-run", "--json", "--workspace", "@platform/client"]);
  const [pack] = JSON.parse(stdout) as { name: string; files: { path: string }[] }[];
  assert.equal(pack?.name, "@platform/client");
  assert.deepEqual(pack.files.map((f) => f.path).sort(), [
    "README.md",
    "dist/error-details.js",
    "dist/gen/checkout/v1/checkout_pb.js",
    "dist/gen/google/rpc/error_details_pb.js",
    "dist/gen/google/rpc/status_pb.js",
    "dist/index.js",
    "dist/validation.js",
    "dist/watch-order.js",
    "package.json",
    "types/error-details.d.ts",
    "types/gen/checkout/v1/checkout_pb.d.ts",
    "types/gen/google/rpc/error_details_pb.d.ts",
    "types/gen/google/rpc/status_pb.d.ts",
    "types/index.d.ts",
    "types/validation.d.ts",
    "types/watch-order.d.ts",
  ]);
  const manifest = JSON.parse(readFileSync("packages/client/package.json", "utf8")) as { private?: boolean; exports: Record<string, Record<string, string>> };
  assert.equal(manifest.private, undefined, "publishable");
  assert.deepEqual(manifest.exports["."], { types: "./types/index.d.ts", default: "./dist/index.js" });
});

test("the examples type-check against the package's declarations", async () => {
  await run(process.execPath, ["node_modules/typescript-7/bin/tsc", "--noEmit", "-p", "examples/tsconfig.json"]);
});
