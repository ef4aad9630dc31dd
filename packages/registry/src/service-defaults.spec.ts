import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { ManifestError } from "./read-manifests.js";
import { serviceDefaults } from "./service-defaults.js";

/** services/<name>/service.json for each entry, in a temporary folder; returns each manifest's URL. */
function services(t: { after(fn: () => void): void }, manifests: Record<string, unknown>): Record<string, URL> {
  const root = mkdtempSync(join(tmpdir(), "service-defaults-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const urls: Record<string, URL> = {};
  for (const [name, m] of Object.entries(manifests)) {
    mkdirSync(join(root, "services", name), { recursive: true });
    writeFileSync(join(root, "services", name, "service.json"), typeof m === "string" ? m : JSON.stringify(m));
    urls[name] = pathToFileURL(join(root, "services", name, "service.json"));
  }
  return urls;
}

const stock = {
  name: "stock",
  description: "the stock",
  ports: { rpc: 7101, admin: 7201 },
  apis: ["shop.v1.StockService"],
  public: false,
  dependencies: [
    { service: "prices", maxConcurrent: 6, minConcurrent: 2, maxQueue: 12 },
    { service: "ledger", maxConcurrent: 3, maxQueue: 0 },
  ],
  database: { schema: "stock", role: "stock" },
};
const prices = { name: "prices", description: "the prices", ports: { rpc: 7102, admin: 7202 }, apis: [], public: false, dependencies: [] };
const ledger = { ...prices, name: "ledger", ports: { rpc: 7103, admin: 7203 } };

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof ManifestError, String(e));
    return e.problems;
  }
  return assert.fail("expected a ManifestError");
}

test("the server's defaults are the manifest's ports and callers; each dependency's are its callee's rpc port on loopback and the bulkhead listed", (t) => {
  const urls = services(t, { stock, prices, ledger });
  const d = serviceDefaults(urls["stock"]!);
  assert.equal(d.name, "stock");
  const { callers, ...server } = d.server;
  assert.deepEqual(server, { port: 7101, adminPort: 7201, edge: false });
  // Who calls a service, from its siblings' manifests: the client certificates mutual TLS accepts.
  assert.deepEqual(callers(), []);
  assert.deepEqual(serviceDefaults(urls["prices"]!).server.callers(), ["stock"]);
  assert.deepEqual(d.apis, ["shop.v1.StockService"]);
  assert.deepEqual(d.dependency("prices"), ["prices", "http://127.0.0.1:7102", { maxConcurrent: 6, minConcurrent: 2, maxQueue: 12 }]);
  // No floor written: the default one (4), capped at the ceiling.
  assert.deepEqual(d.dependency("ledger"), ["ledger", "http://127.0.0.1:7103", { maxConcurrent: 3, minConcurrent: 3, maxQueue: 0 }]);
  assert.equal(d.schema(), "stock");
});

test("a dependency the manifest does not list, a callee without a manifest and a schema without a database are errors naming the file", (t) => {
  const urls = services(t, { stock, ledger });
  const d = serviceDefaults(urls["stock"]!);
  assert.match(problemsOf(() => d.dependency("mailer")).join("\n"), /stock[/\\]service\.json: dependencies: "mailer" is not listed \(listed: prices, ledger\)/);
  assert.match(problemsOf(() => d.dependency("prices")).join("\n"), /prices[/\\]service\.json: missing/);
  assert.match(problemsOf(() => serviceDefaults(urls["ledger"]!).schema()).join("\n"), /ledger[/\\]service\.json: database: the service has no database/);
});

test("an invalid manifest stops the service with every problem, by key", (t) => {
  const urls = services(t, { stock: { ...stock, ports: { rpc: 70000, admin: 7201 }, dependencies: [{ service: "prices", maxQueue: 1 }] }, broken: "{" });
  const problems = problemsOf(() => serviceDefaults(urls["stock"]!));
  assert.ok(
    problems.some((p) => p.endsWith("ports.rpc must be an integer port 1-65535, got 70000")),
    problems.join("\n"),
  );
  assert.ok(
    problems.some((p) => p.endsWith("dependencies[0].maxConcurrent must be an integer >= 1, got undefined")),
    problems.join("\n"),
  );
  assert.match(problemsOf(() => serviceDefaults(urls["broken"]!)).join("\n"), /broken[/\\]service\.json: not valid JSON/);
});
