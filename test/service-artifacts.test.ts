/**
 * The artifacts generated from services/<name>/service.json (npm run
 * generate:services, packages/registry/src/generate): committed and fresh,
 * and right for a service the four do not show (a worker with a database
 * and no api; a public service the gateway forwards), checked with the
 * real tools: docker-compose config and kubectl kustomize.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { generateServiceArtifacts, generatedNotice, renderServiceArtifacts, staleServiceArtifacts } from "@platform/registry/generate";
import { effectiveDependencies, passwordSecret, readServiceManifests } from "@platform/registry";
import { renderKustomization } from "@platform/k8s-check/render";
import { manifestPorts, nextPortPair } from "../scripts/new-service/ports.js";

const root = process.cwd();

test("the committed artifacts are what the manifests generate (run `npm run generate:services` after editing a service.json)", () => {
  assert.deepEqual(staleServiceArtifacts(root), []);
  for (const a of renderServiceArtifacts(root))
    assert.match(a.content, /generated from \S+ by npm run generate:services; do not edit/, `${a.path} says it is generated`);
  assert.match(generatedNotice, /^generated from services\/\*\/service\.json by npm run generate:services; do not edit$/);
});

/** An overlay as the pinned kubectl kustomize renders it (npm run setup:kubectl). */
function renderOverlay(dir: string): unknown[] {
  return renderKustomization(dir);
}

/**
 * Ports for the two scratch services that no manifest of this repository
 * uses (services added with `npm run new-service` take the next free pairs,
 * so fixed numbers would clash with them).
 */
const stockPorts = nextPortPair(manifestPorts(root));
const ledgerPorts = nextPortPair(new Set([...manifestPorts(root), stockPorts.rpc, stockPorts.admin]));

/**
 * .ci/run installs docker-compose. Elsewhere the compose rendering is skipped
 * with this reason, listed at the end of npm test; with CI set, npm test fails
 * on the skip (scripts/test.ts, test/skip-allowlist.json).
 */
const composeMissing =
  spawnSync("docker-compose", ["version"], { stdio: "ignore" }).status === 0 ? false : "docker-compose is not installed (apt-get install docker-compose)";

/** What the repository itself deploys (compose, Kubernetes, prometheus); the examples and anything else with "deploy": false stay out. */
const deployed = readServiceManifests(root).filter((m) => m.deploy);

/** A copy of what the generator reads and writes, plus two services the four do not show. */
function scratchRepository(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), "artifacts-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (const path of ["docker-compose.yml", "observability", "deploy", "proto", "Dockerfile"]) cpSync(join(root, path), join(dir, path), { recursive: true });
  for (const m of readServiceManifests(root)) {
    mkdirSync(join(dir, "services", m.name, "src"), { recursive: true });
    cpSync(join(root, m.file), join(dir, m.file));
  }
  mkdirSync(join(dir, "packages", "launcher", "src"), { recursive: true });
  mkdirSync(join(dir, "packages", "proto", "src"), { recursive: true });
  const add = (name: string, manifest: Record<string, unknown>) => {
    mkdirSync(join(dir, "services", name, "src"), { recursive: true });
    writeFileSync(
      join(dir, "services", name, "service.json"),
      JSON.stringify({ name, description: `the ${name}`, public: false, dependencies: [], ...manifest }),
    );
  };
  // A public API the gateway forwards, whose service calls one of the repository's (pricing, which stays internal).
  writeFileSync(join(dir, "proto", "stock.proto"), 'syntax = "proto3";\npackage stock.v1;\nservice StockService {}\n');
  add("stock", {
    ports: stockPorts,
    apis: ["stock.v1.StockService"],
    public: true,
    dependencies: [{ service: "pricing", maxConcurrent: 4, maxQueue: 8 }],
  });
  add("ledger", { ports: ledgerPorts, apis: [], database: { schema: "ledger", role: "ledger" } });
  return dir;
}

test("a worker with a database and no api, and a public service: compose, Kubernetes, prometheus, roles, the gateway's list", async (t) => {
  const dir = scratchRepository(t);
  const written = generateServiceArtifacts(dir);
  assert.ok(
    written.includes("docker-compose.yml") && written.includes("deploy/k8s/base/ledger.yaml") && written.includes("deploy/k8s/base/stock.yaml"),
    written.join(", "),
  );
  assert.deepEqual(generateServiceArtifacts(dir), [], "a second run changes nothing");
  const read = (p: string) => readFileSync(join(dir, p), "utf8");

  // --- compose, as docker-compose renders it ---
  await t.test("compose, as docker-compose renders it", { skip: composeMissing }, () => {
    const compose = parse(
      execFileSync("docker-compose", ["-f", join(dir, "docker-compose.yml"), "config"], { encoding: "utf8", env: { ...process.env, SECRETS_DIR: "/secrets" } }),
    ) as {
      services: Record<
        string,
        {
          environment?: Record<string, string>;
          secrets?: { source: string }[];
          depends_on?: Record<string, unknown>;
          ports?: unknown;
          mem_limit?: unknown;
          healthcheck?: unknown;
          logging?: unknown;
        }
      >;
      secrets: Record<string, { file: string }>;
    };
    const ledger = compose.services["ledger"]!;
    assert.equal(ledger.environment?.["DATABASE_URL"], "postgres://ledger@postgres:5432/platform", "no password in the URL");
    assert.equal(ledger.environment?.["DATABASE_PASSWORD_FILE"], "/run/secrets/ledger_db_password");
    assert.deepEqual(
      ledger.secrets?.map((s) => s.source),
      ["ledger_db_password"],
    );
    assert.equal(compose.secrets["ledger_db_password"]?.file, "/secrets/ledger_db_password");
    assert.deepEqual(Object.keys(ledger.depends_on ?? {}), ["postgres"]);
    assert.ok(ledger.mem_limit !== undefined && ledger.healthcheck !== undefined && ledger.logging !== undefined, "x-service's settings apply");
    assert.equal(ledger.ports, undefined, "only the gateway publishes a port");
    assert.equal(compose.services["gateway"]?.environment?.["STOCK_URL"], `http://stock:${stockPorts.rpc}`, "the gateway reaches the public service");
    assert.equal(compose.services["stock"]?.environment?.["PRICING_URL"], "http://pricing:8083");
    // The superuser's, ledger's, and one per deployed service with a database (orders, pricing, receipts, and any added with --db).
    const roles = deployed.flatMap((m) => (m.database ? [m.database.role] : []));
    assert.ok(
      ["orders", "pricing", "receipts"].every((r) => roles.includes(r)),
      roles.join(", "),
    );
    assert.deepEqual(
      compose.services["postgres"]?.secrets?.map((s) => s.source).sort(),
      ["postgres_password", passwordSecret("ledger"), ...roles.map(passwordSecret)].sort(),
    );
    assert.ok(!JSON.stringify(compose).match(/PASSWORD"?:\s*"[^/]/), "no password value in any environment");
  });

  // --- the init script gives ledger its role and schema ---
  const init = read("deploy/compose/postgres-init.sh");
  assert.match(init, /-v ledger_pw="\$\(cat "\$LEDGER_DB_PASSWORD_FILE"\)"/);
  assert.match(init, /^CREATE ROLE ledger LOGIN PASSWORD :'ledger_pw';$/m);
  assert.match(init, /^CREATE SCHEMA ledger AUTHORIZATION ledger;$/m);
  assert.match(read("deploy/compose/example.env"), /ledger_db_password/);

  // --- prometheus scrapes both ---
  const targets = (
    parse(read("observability/prometheus.yml")) as { scrape_configs: { static_configs: { targets: string[] }[] }[] }
  ).scrape_configs[0]!.static_configs.flatMap((c) => c.targets);
  // Every deployed service's admin port (the examples run under npm start only), and the two added here.
  assert.ok(
    ["gateway", "checkout", "orders", "pricing", "receipts", "mailer"].every((n) => deployed.some((m) => m.name === n)),
    deployed.map((m) => m.name).join(", "),
  );
  assert.deepEqual(targets.sort(), [...deployed.map((m) => `${m.name}:${m.ports.admin}`), `ledger:${ledgerPorts.admin}`, `stock:${stockPorts.admin}`].sort());

  // --- Kubernetes, as kubectl kustomize renders it ---
  for (const overlay of ["dev", "production"]) {
    const objects = renderOverlay(join(dir, "deploy/k8s/overlays", overlay)) as { kind: string; metadata: { name: string }; spec: Record<string, any> }[];
    const deployment = (name: string) => objects.find((o) => o.kind === "Deployment" && o.metadata.name === name)!.spec["template"].spec;
    const env = (name: string) => Object.fromEntries((deployment(name).containers[0].env as { name: string; value?: string }[]).map((e) => [e.name, e.value]));
    assert.equal(env("ledger")["DATABASE_URL_FILE"], "/var/run/secrets/platform-database/url");
    assert.deepEqual(deployment("ledger").volumes.find((v: { name: string }) => v.name === "database").secret, {
      secretName: "platform-database",
      items: [{ key: "ledger-url", path: "url" }],
    });
    // Through its headless Service: the gateway balances per call over its pods.
    assert.equal(env("gateway")["STOCK_URL"], `http://stock-headless:${stockPorts.rpc}`);
    assert.equal(objects.find((o) => o.kind === "Service" && o.metadata.name === "stock-headless")?.spec["clusterIP"], "None");
    const policy = (name: string) => objects.find((o) => o.kind === "NetworkPolicy" && o.metadata.name === `${name}-ingress`)!.spec;
    const from = (name: string) =>
      (policy(name)["ingress"] as { from?: { podSelector: { matchLabels: Record<string, string> } }[] }[])
        .flatMap((i) => i.from ?? [])
        .map((f) => f.podSelector.matchLabels["app.kubernetes.io/name"]);
    assert.deepEqual(from("stock"), ["gateway"]);
    assert.deepEqual(from("pricing"), ["stock", "checkout", "orders"]);
    assert.deepEqual(policy("ledger")["ingress"], [], "nothing calls the worker");
    if (overlay === "production") {
      const hpa = objects.find((o) => o.kind === "HorizontalPodAutoscaler" && o.metadata.name === "ledger")!;
      assert.equal(hpa.spec["maxReplicas"], 4);
    }
  }

  // --- the gateway forwards the public service's api, and only that ---
  assert.match(
    read("services/gateway/src/forwarded-apis.generated.ts"),
    new RegExp(
      `^ {2}\\{ api: "stock\\.v1\\.StockService", dependency: "stock", defaultUrl: "http://127\\.0\\.0\\.1:${stockPorts.rpc}", bulkhead: \\{ maxConcurrent: \\d+, minConcurrent: \\d+, maxQueue: \\d+ \\} \\},\\n\\];`,
      "m",
    ),
  );
  assert.match(read("packages/proto/src/index.ts"), /^export \* as stockV1 from "\.\/gen\/stock_pb\.js";$/m, "a new proto is exported");
  const names = JSON.parse(/serviceNames = (\[[^\]]*\]) as const/.exec(read("packages/launcher/src/service-names.generated.ts"))?.[1] ?? "[]") as string[];
  assert.ok(names.includes("stock") && names.includes("ledger"), names.join(", "));
  const at = (n: string) => names.indexOf(n);
  assert.ok(
    at("pricing") < at("orders") && at("orders") < at("checkout") && at("checkout") < at("gateway") && at("stock") < at("gateway"),
    `callees first: ${names.join(", ")}`,
  );
});

test("a file that lost its markers is an error naming the file and the region", (t) => {
  const dir = scratchRepository(t);
  writeFileSync(
    join(dir, "observability/prometheus.yml"),
    readFileSync(join(dir, "observability/prometheus.yml"), "utf8").replace(/# END generated: targets.*\n/, ""),
  );
  assert.throws(
    () => generateServiceArtifacts(dir),
    /observability\/prometheus\.yml: the markers "# BEGIN generated: targets" and "# END generated: targets" are missing/,
  );
});

/** Every dependency a loaded config holds (objects with a name, a baseUrl and an isolation), wherever it sits. */
function dependenciesIn(config: unknown): { name: string; baseUrl: string; isolation: { maxConcurrent: number; minConcurrent?: number; maxQueue: number } }[] {
  const out: ReturnType<typeof dependenciesIn> = [];
  // A forwarded api holds its protobuf descriptor, whose file and service refer to each other: each object is visited once.
  const seen = new WeakSet<object>();
  const walk = (v: unknown) => {
    if (typeof v !== "object" || v === null || seen.has(v)) return;
    seen.add(v);
    if (Array.isArray(v)) return v.forEach(walk);
    const o = v as Record<string, unknown>;
    if (typeof o["name"] === "string" && typeof o["baseUrl"] === "string" && typeof o["isolation"] === "object") out.push(o as never);
    else Object.values(o).forEach(walk);
  };
  walk(config);
  return out;
}

test("each manifest says what its config.ts does: ports, the services it calls, each bulkhead", async () => {
  const manifests = readServiceManifests(root);
  for (const m of manifests) {
    const { loadConfig } = (await import(`../services/${m.name}/src/config.ts`)) as {
      loadConfig(env: Record<string, string>): { server: { port: number; adminPort: number } };
    };
    const config = loadConfig(m.database ? { DATABASE_URL: "postgres://x@127.0.0.1:1/platform" } : {});
    assert.deepEqual({ rpc: config.server.port, admin: config.server.adminPort }, m.ports, `${m.file}: ports`);
    const fromConfig = dependenciesIn(config)
      .map((d) => ({
        service: d.name,
        port: Number(new URL(d.baseUrl).port),
        maxConcurrent: d.isolation.maxConcurrent,
        minConcurrent: d.isolation.minConcurrent,
        maxQueue: d.isolation.maxQueue,
      }))
      .sort((a, b) => a.service.localeCompare(b.service));
    const fromManifest = effectiveDependencies(m, manifests)
      .map((d) => ({
        service: d.service,
        port: manifests.find((x) => x.name === d.service)!.ports.rpc,
        maxConcurrent: d.maxConcurrent,
        minConcurrent: d.minConcurrent,
        maxQueue: d.maxQueue,
      }))
      .sort((a, b) => a.service.localeCompare(b.service));
    assert.deepEqual(fromConfig, fromManifest, `${m.file}: dependencies and their bulkheads agree with services/${m.name}/src/config.ts`);
  }
});
