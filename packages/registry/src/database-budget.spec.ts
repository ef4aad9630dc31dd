import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { planDatabasePools, readPostgresServers, type PostgresServer } from "./database-budget.js";
import type { LoadedManifest } from "./manifest.js";
import { parseManifest } from "./parse-manifest.js";
import { readServiceManifests, repositoryRoot } from "./read-manifests.js";

function service(name: string, over: Record<string, unknown> = {}): LoadedManifest {
  const parsed = parseManifest(
    { name, description: name, ports: { rpc: 1, admin: 2 }, apis: [], public: false, dependencies: [], database: { schema: name, role: name }, ...over },
    name,
  );
  assert.ok(parsed.manifest, parsed.problems.join("; "));
  return { ...parsed.manifest, file: `services/${name}/service.json` };
}

// This repository's servers: dev 100 less 10, every HPA at 2; production 200 less 20, the manifests' production ceilings.
const servers: Record<string, PostgresServer> = {
  dev: { maxConnections: 100, reserved: 10, maxReplicas: 2 },
  production: { maxConnections: 200, reserved: 20, maxReplicas: "production" },
};
// Shaped like this repository's: a worker with its own pool, two services scaled to 4 (6 in production).
const builtIns = [
  service("worker", { kubernetes: { maxReplicas: 2, productionMaxReplicas: 3, env: { DB_POOL_MAX: "4" } } }),
  service("ledger", { kubernetes: { maxReplicas: 4, productionMaxReplicas: 6 } }),
  service("catalog", { kubernetes: { maxReplicas: 4, productionMaxReplicas: 6 } }),
];
const added = (n: number) => Array.from({ length: n }, (_, i) => service(`a${i + 1}`));

test("the default pool (5) while the servers have room; a pool set in the manifest is kept", () => {
  for (const n of [0, 3]) {
    const plan = planDatabasePools([...builtIns, ...added(n)], servers);
    assert.equal(plan.pools["ledger"], 5, `${n} added`);
    assert.equal(plan.pools["worker"], 4);
    assert.equal(plan.fixed["worker"], true);
  }
});

test("a fourth added service shares the budget instead of exceeding it (it went 102 of 90 in dev)", () => {
  const plan = planDatabasePools([...builtIns, ...added(4)], servers);
  // dev: the worker 3 x 4 = 12, six derived services 3 x 4 each = 72: 84 of 90. production: 16 + 2 x 7 x 4 + 4 x 5 x 4 = 152 of 180.
  assert.deepEqual(plan.pools, { worker: 4, ledger: 4, catalog: 4, a1: 4, a2: 4, a3: 4, a4: 4 });
});

test("services not deployed, and services without a database, hold no connections", () => {
  const plan = planDatabasePools([...builtIns, service("notes", { deploy: false }), service("echo", { database: undefined })], servers);
  assert.deepEqual(Object.keys(plan.pools).sort(), ["catalog", "ledger", "worker"]);
});

test("more than the server allows even at a pool of 2 fails, naming the overlay, the server's numbers and each service", () => {
  // dev: 12 + 3 x 2 per derived service; 14 of them need 96 > 90.
  assert.doesNotThrow(() => planDatabasePools([...builtIns, ...added(11)], servers));
  assert.throws(
    () => planDatabasePools([...builtIns, ...added(12)], servers),
    (e: Error) => {
      assert.match(e.message, /need more than the server allows, even with DB_POOL_MAX 2 per pod/);
      assert.match(
        e.message,
        /dev: its PostgreSQL allows 90 \(max_connections 100 less 10 reserved\), the services need 96 at their largest: worker \(2 \+ 1\) x 4 = 12, ledger \(2 \+ 1\) x 2 = 6, .*a12 \(2 \+ 1\) x 2 = 6/,
      );
      assert.doesNotMatch(e.message, /production:/, "production still has room");
      assert.match(e.message, /Raise the server's max_connections and deploy\/k8s\/postgres\.json together/);
      return true;
    },
  );
});

test("a pool set in a manifest that alone exceeds a server fails too", () => {
  const greedy = service("greedy", { kubernetes: { maxReplicas: 4, productionMaxReplicas: 4, env: { DB_POOL_MAX: "40" } } });
  assert.throws(() => planDatabasePools([greedy], servers), /dev: its PostgreSQL allows 90 .* greedy \(2 \+ 1\) x 40 = 120/);
});

test("deploy/k8s/postgres.json: read and validated, every problem named", (t) => {
  const root = mkdtempSync(join(tmpdir(), "postgres-servers-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  assert.throws(() => readPostgresServers(root), /deploy\/k8s\/postgres\.json is missing/);
  mkdirSync(join(root, "deploy", "k8s"), { recursive: true });
  writeFileSync(join(root, "deploy/k8s/postgres.json"), JSON.stringify({ overlays: { dev: { maxConnections: 10, reserved: 10, maxReplicas: "many" } } }));
  assert.throws(
    () => readPostgresServers(root),
    (e: Error) => {
      assert.match(e.message, /overlays\.dev\.maxReplicas: expected an integer of at least 1, got "many"/);
      assert.match(e.message, /overlays\.dev\.reserved: 10 leaves nothing of maxConnections 10/);
      return true;
    },
  );
  // This repository's file, with this repository's manifests: the plan the generated files carry.
  assert.deepEqual(readPostgresServers(repositoryRoot), servers);
  assert.equal(planDatabasePools(readServiceManifests(repositoryRoot), servers).pools["orders"], 5, "this repository's orders keeps the default");
});
