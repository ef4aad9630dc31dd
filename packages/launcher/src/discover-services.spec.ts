import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { discoverServices } from "./discover-services.js";

function servicesDir(manifests: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), "discover-"));
  for (const [name, manifest] of Object.entries(manifests)) {
    mkdirSync(join(dir, name));
    if (manifest !== undefined) writeFileSync(join(dir, name, "service.json"), typeof manifest === "string" ? manifest : JSON.stringify(manifest));
  }
  return dir;
}

test("services with a service.json are found, by name; the four and folders without one are not", (t) => {
  const dir = servicesDir({
    gateway: { name: "gateway", ports: { rpc: 8080, admin: 9080 } },
    stock: { name: "stock", ports: { rpc: 8085, admin: 9085 } },
    inventory: { name: "inventory", ports: { rpc: 8084, admin: 9084 }, database: { schema: "inventory", role: "inventory" } },
    "by-hand": undefined,
  });
  t.after(() => rmSync(dir, { recursive: true }));
  assert.deepEqual(discoverServices(dir), [
    { name: "inventory", port: 8084, adminPort: 9084, database: true },
    { name: "stock", port: 8085, adminPort: 9085, database: false },
  ]);
});

test("a malformed manifest is an error naming the file and the key", (t) => {
  for (const [manifest, message] of [
    [{ name: "broken", ports: { rpc: "8084", admin: 9084 } }, /broken\/service\.json: "ports" must be/],
    [{ name: "broken", ports: { rpc: 8084, admin: 8084 } }, /"ports" must be/],
    [{ name: "broken" }, /"ports" must be/],
    [{ name: "other", ports: { rpc: 8084, admin: 9084 } }, /"name" must be the folder's name, "broken", got "other"/],
    [{ name: "broken", ports: { rpc: 8084, admin: 9084 }, database: true }, /"database" must be/],
    [null, /"name" must be/],
    ["{ not json", /broken\/service\.json: not valid JSON/],
  ] as const) {
    const dir = servicesDir({ broken: manifest });
    t.after(() => rmSync(dir, { recursive: true }));
    assert.throws(() => discoverServices(dir), message);
  }
});

test("this repository's services folder reads without error (what npm start does first), the examples included", () => {
  const found = discoverServices();
  for (const s of found) assert.ok(s.port !== s.adminPort, s.name);
  assert.deepEqual(
    found.filter((s) => s.name.startsWith("example-")).map((s) => [s.name, s.database]),
    [
      ["example-echo", false],
      ["example-notes", true],
    ],
  );
});
