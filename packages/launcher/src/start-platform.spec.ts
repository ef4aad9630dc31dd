import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readServiceManifests, type LoadedManifest } from "@platform/registry";
import { parseReplicas, startPlatform } from "./start-platform.js";

function scratch(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), "launcher-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test("without an edge there is nothing to publish: refused before anything starts", async (t) => {
  const dataDir = scratch(t);
  const manifests = readServiceManifests().filter((m) => !m.edge);
  await assert.rejects(startPlatform({ dataDir, manifests }), /no service has "edge": true/);
  assert.equal(existsSync(join(dataDir, "postgres")), false, "no database was started");
});

test("a manifest whose service has no entry file is refused before the database starts, naming the file", async (t) => {
  const dataDir = scratch(t);
  const ghost: LoadedManifest = {
    ...readServiceManifests().find((m) => !m.edge && !m.database)!,
    name: "ghost-service",
    file: "services/ghost-service/service.json",
  };
  await assert.rejects(
    startPlatform({ dataDir, manifests: [...readServiceManifests(), ghost], from: "source" }),
    /services\/ghost-service\/src\/main\.ts does not exist/,
  );
  assert.equal(existsSync(join(dataDir, "postgres")), false, "no database was started");
});

test("this repository's manifests come callees first: the order npm start starts them in (and stops them the other way)", () => {
  const manifests = readServiceManifests();
  const at = (name: string) => manifests.findIndex((m) => m.name === name);
  for (const m of manifests) for (const d of m.dependencies) assert.ok(at(d.service) < at(m.name), `${d.service} starts before ${m.name}, which calls it`);
});

test("--replicas: service=count pairs; a malformed pair, an unknown service, a bad count or a second edge is refused before anything starts", async (t) => {
  assert.deepEqual(parseReplicas("orders=3, pricing=2"), { orders: 3, pricing: 2 });
  assert.deepEqual(parseReplicas(""), {});
  assert.throws(() => parseReplicas("orders:3"), /service=count pairs/);
  const dataDir = scratch(t);
  await assert.rejects(startPlatform({ dataDir, replicas: { stock: 2 } }), /no service is named "stock"/);
  await assert.rejects(startPlatform({ dataDir, replicas: { orders: 0 } }), /orders=0 must be a whole number from 1 to 16/);
  const edge = readServiceManifests().find((m) => m.edge)!.name;
  await assert.rejects(startPlatform({ dataDir, replicas: { [edge]: 2 } }), /is the edge and holds the one public port/);
  assert.equal(existsSync(join(dataDir, "postgres")), false, "no database was started");
});
