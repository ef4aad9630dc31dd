import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { discoverServices } from "./discover-services.js";

function servicesDir(packages: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), "discover-"));
  for (const [name, manifest] of Object.entries(packages)) {
    mkdirSync(join(dir, name));
    writeFileSync(join(dir, name, "package.json"), typeof manifest === "string" ? manifest : JSON.stringify(manifest));
  }
  return dir;
}

test("services with a platform entry are found, by name; the four and folders without the entry are not", (t) => {
  const dir = servicesDir({
    gateway: { name: "@platform/gateway", platform: { port: 8080, adminPort: 9080 } },
    stock: { name: "@platform/stock", platform: { port: 8085, adminPort: 9085 } },
    inventory: { name: "@platform/inventory", platform: { port: 8084, adminPort: 9084, database: true } },
    "by-hand": { name: "@platform/by-hand" },
  });
  t.after(() => rmSync(dir, { recursive: true }));
  mkdirSync(join(dir, "not-a-package"));
  assert.deepEqual(discoverServices(dir), [
    { name: "inventory", port: 8084, adminPort: 9084, database: true },
    { name: "stock", port: 8085, adminPort: 9085, database: false },
  ]);
});

test("a malformed entry or package.json is an error naming the file", (t) => {
  for (const [manifest, message] of [
    [{ platform: { port: "8084", adminPort: 9084 } }, /broken\/package\.json: "platform" must be/],
    [{ platform: { port: 8084, adminPort: 8084 } }, /"platform" must be/],
    [{ platform: { port: 8084, adminPort: 9084, database: "yes" } }, /"platform" must be/],
    [{ platform: null }, /"platform" must be/],
    ["{ not json", /broken\/package\.json: not valid JSON/],
  ] as const) {
    const dir = servicesDir({ broken: manifest });
    t.after(() => rmSync(dir, { recursive: true }));
    assert.throws(() => discoverServices(dir), message);
  }
});

test("this repository's services folder reads without error (what npm start does first)", () => {
  for (const s of discoverServices()) assert.ok(s.port !== s.adminPort, s.name);
});
