/**
 * The manifest (services/<name>/service.json) is the one place a service's
 * ports and bulkheads are written: its config.ts takes them through
 * `serviceDefaults` (@platform/registry), so no literal there can disagree
 * with the manifest. test/service-artifacts.test.ts checks the other half:
 * every loaded config holds exactly the manifest's values.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { readServiceManifests, repositoryRoot } from "@platform/registry";

const manifests = readServiceManifests(repositoryRoot);

/** What in a config.ts source restates a port, an address or a bulkhead instead of taking the manifest's. */
function restated(source: string, ports: ReadonlySet<number>): string[] {
  const found: string[] = [];
  for (const m of source.matchAll(/\b(port|adminPort|maxConcurrent|minConcurrent|maxQueue)\s*:\s*[0-9]/g)) found.push(m[0]);
  for (const m of source.matchAll(/https?:\/\/[^"'`\s]*/g)) found.push(m[0]);
  for (const m of source.matchAll(/(?<![\w.])[0-9][0-9_]{3,5}(?![\w.])/g)) if (ports.has(Number(m[0].replaceAll("_", "")))) found.push(m[0]);
  for (const m of source.matchAll(/read(Server|Dependency)Config\(\s*\w+\s*,\s*"[^"]*"/g)) found.push(`${m[0]}...`);
  return found;
}

const ports = new Set(manifests.flatMap((m) => [m.ports.rpc, m.ports.admin]));

test("no service's config.ts writes a port, an address or a bulkhead: each comes from its manifest", () => {
  for (const m of manifests) {
    const file = join("services", m.name, "src", "config.ts");
    assert.deepEqual(restated(readFileSync(join(repositoryRoot, file), "utf8"), ports), [], `${file} restates its manifest`);
  }
});

test("the check finds each kind of restatement", () => {
  const before = [
    'server: readServerConfig(r, "orders", { port: 8082, adminPort: 9082 }),',
    'pricing: readDependencyConfig(r, "pricing", "http://127.0.0.1:8083", { maxConcurrent: 10, minConcurrent: 3, maxQueue: 32 }),',
    "const admin = 9_082;",
  ].join("\n");
  assert.deepEqual(restated(before, new Set([8082, 9082, 8083])), [
    "port: 8",
    "adminPort: 9",
    "maxConcurrent: 1",
    "minConcurrent: 3",
    "maxQueue: 3",
    "http://127.0.0.1:8083",
    "8082",
    "9082",
    "8083",
    "9_082",
    'readServerConfig(r, "orders"...',
    'readDependencyConfig(r, "pricing"...',
  ]);
  assert.deepEqual(restated('server: readServerConfig(r, defaults.name, defaults.server),\ntimeoutMs: r.int("X_MS", 60_000)', ports), []);
});
