/**
 * The Kubernetes manifests (deploy/): every overlay is rendered with real
 * kustomize (the pinned `kubectl kustomize`, `npm run setup:kubectl`), every
 * object is validated against the Kubernetes 1.34 schemas with unknown fields
 * refused, and the platform's deployment policies must hold. The renderer,
 * the schema checks and each policy are tested on their own in
 * packages/k8s-check (a passing and a failing manifest per rule); here they
 * run on what this repository ships, with the facts (which variables each
 * service reads, the code's defaults) read from its source.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { parseAllDocuments } from "yaml";
import {
  findOverlays,
  idOf,
  policyViolations,
  readManifests,
  readPlatformFacts,
  renderKustomization,
  schemaErrors,
  unknownFieldErrors,
  type K8sObject,
} from "@platform/k8s-check";
import { callersOf, connectionBudget, readPostgresServers, readServiceManifests } from "@platform/registry";
import type { IDeployment } from "kubernetes-models/apps/v1/Deployment";
import type { IHorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import type { IPodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import type { IConfigMap } from "kubernetes-models/v1/ConfigMap";
import type { IContainer } from "kubernetes-models/v1/Container";
import type { IService } from "kubernetes-models/v1/Service";

const root = process.cwd();

// Who calls whom: the deployed services of the manifests (services/<name>/service.json).
const manifests = readServiceManifests(root);
const expectedCallers: Record<string, string[]> = Object.fromEntries(
  manifests.filter((m) => m.deploy).map((m) => [m.name, m.edge ? [] : callersOf(m.name, manifests).sort()]),
);

const facts = readPlatformFacts(root, expectedCallers, "gateway");
/**
 * Database connections each overlay may hold at its largest (docs/scaling.md):
 * its PostgreSQL's max_connections less what is reserved, as
 * deploy/k8s/postgres.json declares the server (dev: the default 100, less
 * 10; production: 200, less 20). The generator derives the pools from the
 * same file; this checks what the overlays render, HPA ceilings included.
 */
const connectionBudgets: Record<string, number> = Object.fromEntries(
  Object.entries(readPostgresServers(root)).map(([overlay, server]) => [overlay, connectionBudget(server)]),
);
const factsFor = (overlay: string) => ({ ...facts, databaseConnectionBudget: connectionBudgets[overlay] ?? facts.databaseConnectionBudget });

/** deploy/k8s/overlays/NAME -> NAME; every kustomization under deploy/ that nothing includes. */
const overlays = new Map(findOverlays(join(root, "deploy")).map((dir) => [relative(join(root, "deploy", "k8s", "overlays"), dir), dir]));
const namespaces: Record<string, string> = { dev: "resilient-platform-dev", production: "resilient-platform" };

const renderCache = new Map<string, K8sObject[]>();

/** A fresh copy of the rendered overlay: tests may change it. */
function render(overlay: string): K8sObject[] {
  let objects = renderCache.get(overlay);
  if (objects === undefined) {
    const dir = overlays.get(overlay);
    assert.ok(dir, `no overlay ${overlay} under deploy/`);
    objects = renderKustomization(dir);
    renderCache.set(overlay, objects);
  }
  return structuredClone(objects);
}

test("the overlays under deploy/ are dev and production", () => {
  assert.deepEqual([...overlays.keys()].sort(), Object.keys(namespaces).sort());
});

for (const overlay of overlays.keys()) {
  describe(`deploy/k8s/overlays/${overlay}`, () => {
    test("renders into its namespace, every object labelled part of the platform", () => {
      const objects = render(overlay);
      const namespace = namespaces[overlay];
      assert.ok(objects.length > 20, `only ${objects.length} objects`);
      for (const o of objects) {
        if (o.kind === "Namespace") assert.equal(o.metadata.name, namespace);
        else assert.equal(o.metadata.namespace, namespace, `${idOf(o)} is in the overlay's namespace`);
        assert.equal(o.metadata.labels?.["app.kubernetes.io/part-of"], facts.partOf, `${idOf(o)} is labelled part-of=${facts.partOf}`);
      }
    });

    test("every object is valid against the Kubernetes schemas", async () => {
      assert.deepEqual(await schemaErrors(render(overlay)), []);
    });

    test("no object has unknown fields", () => {
      assert.deepEqual(unknownFieldErrors(render(overlay)), []);
    });

    test("the platform's policies hold", () => {
      assert.deepEqual(policyViolations(render(overlay), factsFor(overlay)), []);
    });
  });
}

function find<T>(objects: K8sObject[], kind: string, name: string): T & K8sObject {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  assert.ok(o, `${kind}/${name}`);
  return o as unknown as T & K8sObject;
}

function container(objects: K8sObject[], name: string): IContainer {
  const c = find<IDeployment>(objects, "Deployment", name).spec?.template.spec?.containers[0];
  assert.ok(c, `container of ${name}`);
  return c;
}

/**
 * The policies with this repository's facts: what each service's config
 * reads and the code's defaults, read from the source. (Each rule's own
 * failing cases are in packages/k8s-check.)
 */
const brokenCopies: [string, RegExp, (objects: K8sObject[]) => void][] = [
  ["misspelt variable", /gateway.*DRAIN_TIMEOUT is read by no config/, (o) => container(o, "gateway").env?.push({ name: "DRAIN_TIMEOUT", value: "5000" })],
  [
    "setting for a dependency the service does not call",
    /gateway.*ORDERS_MAX_QUEUE is read by no config/,
    (o) => container(o, "gateway").env?.push({ name: "ORDERS_MAX_QUEUE", value: "10" }),
  ],
  [
    "the database where the code reads none",
    /checkout.*DATABASE_URL_FILE given to a service that does not use the database/,
    (o) => container(o, "checkout").env?.push({ name: "DATABASE_URL_FILE", value: "/var/run/secrets/platform-database/url" }),
  ],
  [
    "too many database connections",
    /database: .* adds up to \d+ connections, over the budget/,
    (o) => {
      const spec = find<IHorizontalPodAutoscaler>(o, "HorizontalPodAutoscaler", "orders").spec;
      if (spec) spec.maxReplicas = 40;
    },
  ],
  [
    "grace period shorter than the code's default drain",
    /Deployment\/pricing: terminationGracePeriodSeconds \(10\) must exceed preStop sleep \(5 s\) \+ DRAIN_TIMEOUT_MS \(10 s\)/,
    (o) => {
      const spec = find<IDeployment>(o, "Deployment", "pricing").spec?.template.spec;
      if (spec) spec.terminationGracePeriodSeconds = 10;
      const cm = find<IConfigMap>(o, "ConfigMap", "platform-common");
      if (cm.data) delete cm.data["DRAIN_TIMEOUT_MS"];
    },
  ],
  [
    "a caller outside the call graph",
    /call graph: pricing is called by \[checkout, gateway, orders\]/,
    (o) => container(o, "gateway").env?.push({ name: "PRICING_URL", value: "http://pricing:8083" }),
  ],
];

describe("the policies with this repository's facts, on broken copies of the production render", () => {
  for (const [label, expected, change] of brokenCopies) {
    test(label, () => {
      const objects = render("production");
      change(objects);
      const found = policyViolations(objects, factsFor("production"));
      assert.ok(
        found.some((v) => expected.test(v)),
        `expected a violation matching ${expected}, got:\n  ${found.join("\n  ") || "(none)"}`,
      );
    });
  }
});

function deployments(objects: K8sObject[]): (IDeployment & K8sObject)[] {
  return objects.filter((o) => o.kind === "Deployment") as unknown as (IDeployment & K8sObject)[];
}

function hpa(objects: K8sObject[], name: string): IHorizontalPodAutoscaler & K8sObject {
  return find<IHorizontalPodAutoscaler>(objects, "HorizontalPodAutoscaler", name);
}

test("dev: one replica each, small pods, gateway on a NodePort, image :dev", () => {
  const objects = render("dev");
  for (const d of deployments(objects)) {
    assert.equal(d.spec?.replicas, 1, d.metadata.name);
    assert.equal(hpa(objects, d.metadata.name).spec?.minReplicas, 1);
    assert.equal(hpa(objects, d.metadata.name).spec?.maxReplicas, 2);
    assert.equal(d.spec?.template.spec?.containers[0]?.image, "resilient-platform:dev");
    assert.equal(d.spec?.template.spec?.containers[0]?.resources?.requests?.["cpu"], "50m");
  }
  const exposed = objects.filter(
    (o) => o.kind === "Service" && (o as unknown as IService).spec?.type !== "ClusterIP" && (o as unknown as IService).spec?.type !== undefined,
  );
  assert.deepEqual(
    exposed.map((s) => `${s.metadata.name}:${(s as unknown as IService).spec?.type}`),
    ["gateway-nodeport:NodePort"],
  );
  assert.equal(find<IConfigMap>(objects, "ConfigMap", "platform-common").data?.["LOG_LEVEL"], "debug");
});

test("production: three replicas, HPA from 3, PDB keeps two, gateway behind a LoadBalancer", () => {
  const objects = render("production");
  for (const d of deployments(objects)) {
    assert.equal(d.spec?.replicas, 3, d.metadata.name);
    assert.equal(hpa(objects, d.metadata.name).spec?.minReplicas, 3);
    assert.equal(d.spec?.template.spec?.containers[0]?.image, "registry.example.com/resilient-platform:0.1.0");
  }
  for (const pdb of objects.filter((o) => o.kind === "PodDisruptionBudget") as unknown as IPodDisruptionBudget[]) {
    const { minAvailable, maxUnavailable } = pdb.spec ?? {};
    assert.ok(minAvailable === 2 || maxUnavailable === 1, JSON.stringify(pdb.spec));
  }
  // Real kustomize applies a patch whose target matches nothing silently: the values show each patch took,
  // for every deployed service (its manifest's kubernetes.productionMaxReplicas), those of the order path as documented.
  const deployed = manifests.filter((m) => m.deploy);
  const ceilings = Object.fromEntries(deployed.map((m) => [m.name, hpa(objects, m.name).spec?.maxReplicas]));
  assert.deepEqual(ceilings, Object.fromEntries(deployed.map((m) => [m.name, m.kubernetes.productionMaxReplicas])));
  assert.deepEqual(
    { gateway: ceilings["gateway"], checkout: ceilings["checkout"], orders: ceilings["orders"], pricing: ceilings["pricing"] },
    { gateway: 10, checkout: 8, orders: 6, pricing: 6 },
  );
  const exposed = objects.filter((o) => o.kind === "Service" && (o as unknown as IService).spec?.type === "LoadBalancer");
  assert.deepEqual(
    exposed.map((s) => s.metadata.name),
    ["gateway-public"],
  );
  assert.ok(!objects.some((o) => o.kind === "Service" && (o as unknown as IService).spec?.type === "NodePort"));
});

/** A dependency's isolation settings (dependency-config.ts): bulkhead, adaptive limit, method classes, breakers. */
function isIsolationSetting(name: string): boolean {
  return !name.startsWith("ADMISSION_") && (/_(LIMIT|MAX_CONCURRENT|MIN_CONCURRENT|MAX_QUEUE|METHOD_CLASSES)$/.test(name) || name.startsWith("BREAKER_"));
}

test("compose and Kubernetes ship the same isolation settings (the per-hop defaults in the code, docs/isolation.md)", () => {
  const fromCompose: Record<string, Record<string, string>> = {};
  const compose = parseAllDocuments(readFileSync(join(root, "docker-compose.yml"), "utf8"))[0]?.toJS() as {
    services: Record<string, { environment?: Record<string, unknown> }>;
  };
  for (const [name, svc] of Object.entries(compose.services)) {
    if (svc.environment?.["SERVICE"] === undefined) continue; // PostgreSQL, Prometheus, Grafana
    fromCompose[name] = Object.fromEntries(
      Object.entries(svc.environment ?? {})
        .filter(([k]) => isIsolationSetting(k))
        .map(([k, v]) => [k, String(v)]),
    );
  }
  for (const overlay of overlays.keys()) {
    const fromK8s: Record<string, Record<string, string>> = {};
    for (const w of readManifests(render(overlay), facts).workloads) {
      fromK8s[w.name] = Object.fromEntries([...w.env].filter(([k]) => isIsolationSetting(k)).map(([k, v]) => [k, "value" in v ? v.value : JSON.stringify(v)]));
    }
    assert.deepEqual(fromK8s, fromCompose, `${overlay}: isolation settings differ from docker-compose.yml`);
  }
});
