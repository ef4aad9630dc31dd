import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ManifestError, readServiceManifests, repositoryRoot } from "./read-manifests.js";
import { parseManifest } from "./parse-manifest.js";
import { callDepth } from "./graph.js";

const proto = `syntax = "proto3";\npackage shop.v1;\n// service Commented { }\nservice FrontService {}\nservice StockService {}\nservice PriceService {}\n`;

function manifest(name: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return { name, description: `the ${name}`, ports: { rpc: 0, admin: 0 }, apis: [], public: false, dependencies: [], ...over };
}

/** A repository with proto/shop.proto and one services/<name>/service.json per entry (a string: written as is). */
function repo(t: { after(fn: () => void): void }, services: Record<string, Record<string, unknown> | string>): string {
  const root = mkdtempSync(join(tmpdir(), "registry-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, "proto"));
  writeFileSync(join(root, "proto", "shop.proto"), proto);
  let port = 7000;
  for (const [folder, m] of Object.entries(services)) {
    mkdirSync(join(root, "services", folder), { recursive: true });
    const withPorts =
      typeof m === "string" ? m : JSON.stringify({ ...m, ports: (m["ports"] as { rpc: number }).rpc === 0 ? { rpc: ++port, admin: port + 1000 } : m["ports"] });
    writeFileSync(join(root, "services", folder, "service.json"), withPorts);
  }
  mkdirSync(join(root, "services", "a-library"));
  return root;
}

const shop = {
  gateway: manifest("gateway", { edge: true, apis: ["shop.v1.FrontService"], dependencies: [{ service: "front", maxConcurrent: 8, maxQueue: 4 }] }),
  front: manifest("front", {
    public: true,
    apis: ["shop.v1.FrontService"],
    dependencies: [
      { service: "stock", maxConcurrent: 4, maxQueue: 4 },
      { service: "prices", maxConcurrent: 4, minConcurrent: 2, maxQueue: 0 },
    ],
  }),
  stock: manifest("stock", {
    apis: ["shop.v1.StockService"],
    dependencies: [{ service: "prices", maxConcurrent: 2, maxQueue: 2 }],
    database: { schema: "stock", role: "stock" },
  }),
  prices: manifest("prices", { apis: ["shop.v1.PriceService"] }),
  // A worker: no api, a database, calls nothing.
  receipts: manifest("receipts", { database: { schema: "receipts", role: "receipts_worker" } }),
};

function problems(root: string): string[] {
  try {
    readServiceManifests(root);
  } catch (e) {
    assert.ok(e instanceof ManifestError, String(e));
    return e.problems;
  }
  return assert.fail("expected a ManifestError");
}

test("manifests are read in dependency order (callees first, ties by name); folders without one are not services", (t) => {
  const read = readServiceManifests(repo(t, shop));
  assert.deepEqual(
    read.map((m) => m.name),
    ["prices", "stock", "front", "gateway", "receipts"],
  );
  const front = read.find((m) => m.name === "front")!;
  assert.equal(front.file, join("services", "front", "service.json"));
  assert.deepEqual(front.dependencies[1], { service: "prices", maxConcurrent: 4, minConcurrent: 2, maxQueue: 0 });
  assert.deepEqual(front.kubernetes, { maxReplicas: 4, productionMaxReplicas: 4, env: {} });
  assert.equal(read.find((m) => m.name === "receipts")!.database?.role, "receipts_worker");
});

test("a call depth counts the services on the longest chain below, the service itself included", (t) => {
  const read = readServiceManifests(repo(t, shop));
  // gateway -> front -> stock -> prices is longer than front -> prices.
  assert.deepEqual(
    ["prices", "stock", "front", "gateway", "receipts"].map((name) => callDepth(name, read)),
    [1, 2, 3, 4, 1],
  );
  assert.throws(() => callDepth("nobody", read), /nobody: no such service/);
});

test("a bad key is named with its file and what was given", (t) => {
  const root = repo(t, {
    ...shop,
    prices: {
      ...shop.prices,
      ports: { rpc: 70000, admin: "9" },
      colour: "blue",
      dependencies: [{ service: "Stock", maxConcurrent: 0, maxQueue: -1, burst: 1 }],
    },
    stock: "{ not json",
    front: { ...shop.front, name: "frontend" },
  });
  const file = (name: string) => join("services", name, "service.json");
  assert.deepEqual(problems(root).sort(), [
    `${file("front")}: name must be the folder's name "front", got "frontend"`,
    `${file("prices")}: dependencies[0].burst is unknown (known: service, maxConcurrent, minConcurrent, maxQueue)`,
    `${file("prices")}: dependencies[0].maxConcurrent must be an integer >= 1, got 0`,
    `${file("prices")}: dependencies[0].maxQueue must be an integer >= 0, got -1`,
    `${file("prices")}: dependencies[0].service must be a service name, got "Stock"`,
    `${file("prices")}: ports.admin must be an integer port 1-65535, got "9"`,
    `${file("prices")}: ports.rpc must be an integer port 1-65535, got 70000`,
    `${file("prices")}: unknown key "colour" (known: name, description, ports, apis, public, edge, deploy, dependencies, database, kubernetes, launcher)`,
    `${file("stock")}: not valid JSON (Expected property name or '}' in JSON at position 2 (line 1 column 3))`,
  ]);
});

test("across manifests: unknown service, a cycle, a port clash, an api not in proto, a role taken twice", (t) => {
  const root = repo(t, {
    ...shop,
    prices: {
      ...shop.prices,
      apis: ["shop.v1.PriceService", "shop.v1.Commented"],
      dependencies: [
        { service: "front", maxConcurrent: 1, maxQueue: 1 },
        { service: "ghost", maxConcurrent: 1, maxQueue: 1 },
      ],
    },
    receipts: { ...shop.receipts, ports: { rpc: 7003, admin: 9999 }, database: { schema: "receipts", role: "stock" } },
  });
  const file = (name: string) => join("services", name, "service.json");
  const found = problems(root);
  assert.ok(
    found.includes(`${file("prices")}: dependencies[1].service: no service "ghost" (known: front, gateway, prices, receipts, stock)`),
    found.join("\n"),
  );
  assert.ok(
    found.includes(
      `${file("prices")}: apis[1]: "shop.v1.Commented" is not a service declared in proto/ (declared: shop.v1.FrontService, shop.v1.PriceService, shop.v1.StockService)`,
    ),
    found.join("\n"),
  );
  assert.ok(
    found.some((p) => /^services\/\w+\/service\.json: ports\.rpc: 7003 is also \w+'s ports\.rpc$/.test(p)),
    found.join("\n"),
  );
  assert.ok(
    found.includes(`${file("stock")}: database.role: "stock" is also receipts's`) ||
      found.includes(`${file("receipts")}: database.role: "stock" is also stock's`),
    found.join("\n"),
  );
  assert.ok(
    found.includes(`${file("front")}: dependencies: a cycle front -> stock -> prices -> front; calls must form a tree from the edge down`),
    found.join("\n"),
  );
});

test("exactly one edge, which is not itself public; a service the edge calls is public", (t) => {
  const file = (name: string) => join("services", name, "service.json");
  assert.deepEqual(problems(repo(t, { ...shop, gateway: { ...shop.gateway, edge: false } })), [
    `${file("gateway")}: apis: "shop.v1.FrontService" is also served by front`,
    'exactly one service must have "edge": true (the gateway), found 0: none',
  ]);
  assert.deepEqual(problems(repo(t, { ...shop, gateway: { ...shop.gateway, public: true }, front: { ...shop.front, public: false } })), [
    `${file("gateway")}: public: the edge is not itself published by the gateway; set "public": false`,
    `${file("gateway")}: apis: the edge serves "shop.v1.FrontService", which no public service serves`,
    `${file("front")}: public: the edge calls it, so it must be public`,
  ]);
});

test("a service that is not deployed (an example) is neither public, nor the edge, nor called by a deployed service", (t) => {
  const file = (name: string) => join("services", name, "service.json");
  assert.equal(readServiceManifests(repo(t, { ...shop, receipts: { ...shop.receipts, deploy: false } })).find((m) => m.name === "receipts")?.deploy, false);
  assert.deepEqual(problems(repo(t, { ...shop, prices: { ...shop.prices, deploy: false } })).sort(), [
    `${file("front")}: dependencies: calls prices, which is not deployed ("deploy": false)`,
    `${file("stock")}: dependencies: calls prices, which is not deployed ("deploy": false)`,
  ]);
  assert.deepEqual(problems(repo(t, { ...shop, front: { ...shop.front, deploy: "no" } })), [`${file("front")}: deploy must be true or false, got "no"`]);
  assert.ok(
    problems(repo(t, { ...shop, front: { ...shop.front, deploy: false } })).includes(
      `${file("front")}: deploy: a public service must be deployed; remove "deploy": false`,
    ),
  );
});

test("parseManifest fills the optional keys' defaults", () => {
  const { manifest: m, problems: p } = parseManifest({ ...manifest("x"), ports: { rpc: 1, admin: 2 } }, "x");
  assert.deepEqual(p, []);
  assert.deepEqual(m, {
    name: "x",
    description: "the x",
    ports: { rpc: 1, admin: 2 },
    apis: [],
    public: false,
    edge: false,
    deploy: true,
    dependencies: [],
    kubernetes: { maxReplicas: 4, productionMaxReplicas: 4, env: {} },
    launcher: { env: {} },
  });
});

test("the JSON schema and the reader know the same keys", () => {
  const schema = JSON.parse(readFileSync(join(repositoryRoot, "packages/registry/service.schema.json"), "utf8")) as {
    properties: Record<string, unknown>;
    required: string[];
  };
  const keys = Object.keys(schema.properties).filter((k) => k !== "$schema");
  const { problems: p } = parseManifest({ ...Object.fromEntries(keys.map((k) => [k, undefined])), ...manifest("x"), ports: { rpc: 1, admin: 2 } }, "x");
  assert.deepEqual(p, []);
  const unknown = parseManifest({ ...manifest("x"), ports: { rpc: 1, admin: 2 }, surprise: 1 }, "x").problems[0];
  assert.match(unknown ?? "", new RegExp(`known: ${keys.join(", ")}\\)`));
  for (const k of schema.required)
    assert.match(
      parseManifest({ ...manifest("x"), ports: { rpc: 1, admin: 2 }, [k]: undefined }, "x").problems.join("\n"),
      new RegExp(`^${k} `, "m"),
      `${k} is required`,
    );
});

test("this repository's manifests read without error (what npm start does first)", () => {
  const read = readServiceManifests();
  assert.ok(read.length >= 4, read.map((m) => m.name).join(", "));
  assert.equal(read.filter((m) => m.edge).length, 1);
});
