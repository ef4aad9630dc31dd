/**
 * `npm run example:client`, as the README tells a new user to run it: it
 * builds the client package, lists products, places an order with an
 * idempotency key and a deadline, and meets each error code on purpose;
 * without a platform it says so and how to start one.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createServer } from "node:net";
import { promisify } from "node:util";
import { buildClientPackage, sharedPlatform, type SharedPlatform } from "@platform/test-support";

const run = promisify(execFile);
// The run's shared platform: the example reads, and writes orders only under its own customer id.
let p: SharedPlatform;
before(async () => {
  await buildClientPackage(); // npm run example:client builds it too; built first, so that parallel test files never rebuild it at once
  p = await sharedPlatform();
});
after(async () => {
  await p?.close();
});

const example = (gatewayUrl: string) => run("npm", ["run", "--silent", "example:client"], { env: { ...process.env, GATEWAY_URL: gatewayUrl } });

test("npm run example:client against the platform: products, an order placed once, each error handled", async () => {
  const { stdout } = await example(p.gatewayUrl);
  const lines = stdout.trim().split("\n");
  assert.match(stdout, /^products: 5$/m);
  assert.match(stdout, /^ {2}MUG-CERAMIC +12\.00 USD {2}Ceramic mug$/m);
  const id = /^order placed: ([0-9a-f-]{36}) total (\d+\.\d\d) USD$/m.exec(stdout)?.[1];
  assert.ok(id, stdout);
  assert.ok(lines.includes("same key, same order: yes"));
  assert.ok(lines.includes(`order read back: ${id} 2 items`));
  assert.ok(lines.includes("same key, different order: already_exists: this idempotency key was used for a different order: use a new key for a new order"));
  assert.ok(lines.includes('unknown SKU: invalid_argument: the request is wrong (unknown sku "NO-SUCH-SKU"): fix it, do not retry'));
  assert.ok(lines.includes("unknown order: not_found: no such thing (order 00000000-0000-0000-0000-000000000000 not found)"));
  assert.match(stdout, /^a 1 ms deadline: deadline_exceeded: .* \(retryable\)$/m);
  assert.equal(lines.at(-1), "done");
  // Placed once, and the retry with the same key did not order again.
  assert.deepEqual(await p.sql("SELECT id FROM orders.orders WHERE customer_id = 'example-client'"), [{ id }]);
});

test("without a running platform it says what to do, and fails", async () => {
  // A port that was free a moment ago: nothing listens there.
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
  await assert.rejects(example(`http://127.0.0.1:${port}`), (e: { code: number; stderr: string }) => {
    assert.equal(e.code, 2);
    assert.match(e.stderr, new RegExp(`Cannot reach the gateway at http://127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\)\\.`));
    assert.match(e.stderr, /This example needs a running platform: start it with `npm start` in another terminal/);
    return true;
  });
});
