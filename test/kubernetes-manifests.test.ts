/**
 * The Kubernetes manifests (deploy/k8s): each overlay is rendered the way
 * `kubectl apply -k` would render it, every object is validated against the
 * Kubernetes API schemas, and the platform's deployment rules are checked.
 * The checker is itself tested on broken copies, so a rule that silently
 * stops checking fails here.
 *
 * Rendering: kubectl and kustomize are not available to the tests, so
 * `buildKustomization` (packages/audit/src/kustomize.ts, shared with the
 * resilience audit) is a small loader. It implements exactly the kustomize
 * features the overlays use (`resources`, files and directories;
 * `namespace`; `images`; inline JSON 6902 `patches` with `add`/`replace`
 * and a target of kind and optional exact name) and throws on anything else,
 * so that an overlay using a feature it does not model fails this test
 * instead of being rendered wrongly. Where kustomize is lenient (a patch that
 * matches nothing) the loader is stricter. Keep the overlays that simple.
 *
 * Schemas: kubernetes-models ships validators compiled from the Kubernetes
 * OpenAPI schemas, offline. Those schemas, like the API's own, allow unknown
 * fields, so a typo (`readinessprobe:`) would pass them; the API server
 * rejects it (kubectl's default strict field validation). To catch it here
 * too, every object is also type-checked as an object literal against the
 * package's TypeScript interfaces of the same schemas, whose excess-property
 * check rejects unknown fields.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import ts from "typescript";
import { parseAllDocuments } from "yaml";
import { buildKustomization, idOf, splitImage, type K8sObject } from "@platform/audit/kustomize";
import type { IDeployment } from "kubernetes-models/apps/v1/Deployment";
import type { IHorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import type { INetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import type { IIngress } from "kubernetes-models/networking.k8s.io/v1/Ingress";
import type { IPodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import type { IConfigMap } from "kubernetes-models/v1/ConfigMap";
import type { IContainer } from "kubernetes-models/v1/Container";
import type { IService } from "kubernetes-models/v1/Service";

const root = process.cwd();
const k8sDir = join(root, "deploy", "k8s");
const overlays = ["dev", "production"] as const;

// ---------------------------------------------------------------------------
// Rendering: a small kustomize subset (see the header)
// ---------------------------------------------------------------------------

const renderCache = new Map<string, K8sObject[]>();

/** A fresh copy of the rendered overlay: tests may mutate it. */
function render(overlay: string): K8sObject[] {
  let objects = renderCache.get(overlay);
  if (objects === undefined) {
    objects = buildKustomization(join(k8sDir, "overlays", overlay));
    renderCache.set(overlay, objects);
  }
  return structuredClone(objects);
}

// ---------------------------------------------------------------------------
// Schema validation
// ---------------------------------------------------------------------------

type ModelClass = new (data: unknown) => { validate(): void };

/** Validates each object with kubernetes-models' compiled schema for its apiVersion and kind. */
async function schemaErrors(objects: K8sObject[]): Promise<string[]> {
  const errors: string[] = [];
  for (const o of objects) {
    let model: ModelClass | undefined;
    try {
      const mod = (await import(`kubernetes-models/${o.apiVersion}/${o.kind}`)) as Record<string, unknown>;
      model = mod[o.kind] as ModelClass | undefined;
    } catch {
      model = undefined;
    }
    if (model === undefined) {
      errors.push(`${idOf(o)}: no schema for ${o.apiVersion} ${o.kind}`);
      continue;
    }
    try {
      new model(o).validate();
    } catch (e) {
      errors.push(`${idOf(o)}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  return errors;
}

/**
 * Unknown fields, via TypeScript: each object becomes an object literal typed
 * with kubernetes-models' interface for its kind, in a virtual module beside
 * this file (so it resolves the same node_modules), and excess-property errors
 * are reported per object.
 */
function unknownFieldErrors(objects: K8sObject[]): string[] {
  const virtualFile = join(root, "test", "__kubernetes-manifests-strict-check__.ts");
  const types = new Map<string, string>();
  const lines: string[] = [];
  const lineToObject = new Map<number, K8sObject>();
  for (const o of objects) {
    const key = `${o.apiVersion}/${o.kind}`;
    if (!types.has(key)) types.set(key, `T${types.size}`);
  }
  for (const [key, alias] of types) {
    const kind = key.slice(key.lastIndexOf("/") + 1);
    lines.push(`import type { I${kind} as ${alias} } from ${JSON.stringify(`kubernetes-models/${key}`)};`);
  }
  objects.forEach((o, i) => {
    lineToObject.set(lines.length, o);
    lines.push(`export const o${i}: ${types.get(`${o.apiVersion}/${o.kind}`)} = ${JSON.stringify(o)};`);
  });
  const source = lines.join("\n");
  const options: ts.CompilerOptions = {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  const readFile = host.readFile.bind(host);
  host.getSourceFile = (name, language, ...rest) => (name === virtualFile ? ts.createSourceFile(name, source, language) : getSourceFile(name, language, ...rest));
  host.fileExists = (name) => name === virtualFile || fileExists(name);
  host.readFile = (name) => (name === virtualFile ? source : readFile(name));
  const program = ts.createProgram([virtualFile], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const message = ts.flattenDiagnosticMessageText(d.messageText, "\n");
    if (d.file?.fileName !== virtualFile || d.start === undefined) return message;
    const o = lineToObject.get(d.file.getLineAndCharacterOfPosition(d.start).line);
    return `${o ? idOf(o) : "imports"}: ${message}`;
  });
}

// ---------------------------------------------------------------------------
// The platform's rules
// ---------------------------------------------------------------------------

const partOf = "resilient-platform";
/** Who may call whom: the platform's shape (docs/kubernetes.md). The gateway is public. */
const expectedCallers: Record<string, string[]> = { gateway: [], checkout: ["gateway"], orders: ["checkout"], pricing: ["checkout", "orders"], receipts: [], mailer: ["receipts"] };
/** Seconds between the end of the drain and SIGKILL: closing pools, flushing logs. */
const shutdownSlackSeconds = 2;
/**
 * Database connections the platform may hold at its largest: PostgreSQL's
 * default max_connections (100) less superuser_reserved_connections (3) and
 * room for psql and maintenance. Raise it with your server's max_connections,
 * or when PgBouncer sits in between (docs/scaling.md).
 */
const databaseConnectionBudget = 90;

function sourceText(path: string): string {
  return readFileSync(join(root, path), "utf8");
}

/**
 * Variable names a config file reads: the literal first argument of its
 * readers, e.g. r.int("PORT", ...). A name built at run time is not seen;
 * see `serviceEnv` for the one such case, per-dependency settings.
 */
function envNamesIn(path: string): Set<string> {
  return new Set([...sourceText(path).matchAll(/\.\w+\(\s*"([A-Z][A-Z0-9_]*)"/g)].map((m) => m[1] ?? ""));
}

/** The default a config file gives a numeric variable, e.g. r.int("DRAIN_TIMEOUT_MS", 10_000, ...). */
function codeDefault(path: string, name: string): number {
  const m = new RegExp(`"${name}",\\s*([0-9_]+)`).exec(sourceText(path));
  if (m?.[1] === undefined) throw new Error(`${path} has no numeric default for ${name}`);
  return Number(m[1].replaceAll("_", ""));
}

interface ServiceEnv {
  /** Every variable a service reads, or the image needs. */
  known: Set<string>;
  needsDatabase: boolean;
}

const serverConfigFile = "packages/runtime/src/server-config.ts";
const dependencyConfigFile = "packages/runtime/src/dependency-config.ts";

/**
 * What a service reads: the server settings, its own config's names and, for
 * each `readDependencyConfig(r, "orders", ...)`, the per-dependency names
 * (ORDERS_URL, ORDERS_MAX_CONCURRENT, ... from the `${prefix}_X` templates of
 * dependency-config.ts) plus that file's shared names (BREAKER_*).
 */
function serviceEnv(service: string): ServiceEnv {
  const file = `services/${service}/src/config.ts`;
  const own = envNamesIn(file);
  const named = [...sourceText(file).matchAll(/readDependencyConfig\(\s*\w+\s*,\s*"([^"]+)"/g)].map((m) => m[1] ?? "");
  // The gateway reads one dependency per API it forwards (services/gateway/src/forwarded-apis.ts).
  const forwardedFile = `services/${service}/src/forwarded-apis.ts`;
  const forwarded = existsSync(join(root, forwardedFile)) ? [...sourceText(forwardedFile).matchAll(/\bdependency:\s*"([^"]+)"/g)].map((m) => m[1] ?? "") : [];
  const dependencies = [...named, ...forwarded].map((n) => n.toUpperCase().replace(/[^A-Z0-9]/g, "_"));
  const perDependency: string[] = [];
  if (dependencies.length > 0) {
    const text = sourceText(dependencyConfigFile);
    const suffixes = [...text.matchAll(/`\$\{\w+\}(_[A-Z0-9_]+)`/g)].map((m) => m[1] ?? "");
    perDependency.push(...envNamesIn(dependencyConfigFile), ...dependencies.flatMap((prefix) => suffixes.map((suffix) => prefix + suffix)));
  }
  // SERVICE picks the entry point (Dockerfile CMD); the rest are the image's.
  const known = new Set([...envNamesIn(serverConfigFile), ...own, ...perDependency, "SERVICE", "NODE_OPTIONS", "NODE_ENV", "TSX_DISABLE_CACHE"]);
  return { known, needsDatabase: own.has("DATABASE_URL") };
}

type EnvValue = { value: string } | { secret: { name: string; key: string } } | { other: string };

function containerEnv(c: IContainer, configMaps: Map<string, IConfigMap>, where: string, out: string[]): Map<string, EnvValue> {
  const env = new Map<string, EnvValue>();
  // envFrom first: `env` entries take precedence, as in Kubernetes.
  for (const from of c.envFrom ?? []) {
    const ref = from.configMapRef?.name;
    if (ref === undefined) {
      out.push(`${where}: envFrom may only reference ConfigMaps`);
      continue;
    }
    const cm = configMaps.get(ref);
    if (cm === undefined) {
      out.push(`${where}: envFrom references ConfigMap ${ref}, which is not rendered`);
      continue;
    }
    for (const [name, value] of Object.entries(cm.data ?? {})) env.set(`${from.prefix ?? ""}${name}`, { value });
  }
  for (const e of c.env ?? []) {
    if (e.value !== undefined) env.set(e.name, { value: e.value });
    else if (e.valueFrom?.secretKeyRef) env.set(e.name, { secret: { name: e.valueFrom.secretKeyRef.name ?? "", key: e.valueFrom.secretKeyRef.key } });
    else env.set(e.name, { other: JSON.stringify(e.valueFrom ?? {}) });
  }
  return env;
}

function literal(env: Map<string, EnvValue>, name: string): string | undefined {
  const v = env.get(name);
  return v !== undefined && "value" in v ? v.value : undefined;
}

function matches(selector: Record<string, string> | undefined, labels: Record<string, string>): boolean {
  return Object.entries(selector ?? {}).every(([k, v]) => labels[k] === v);
}

/** A Deployment's pods as the rules see them. */
interface Workload {
  name: string;
  deployment: IDeployment;
  labels: Record<string, string>;
  container: IContainer | undefined;
  rpcPort: number | undefined;
  adminPort: number | undefined;
  env: Map<string, EnvValue>;
}

function namedPort(c: IContainer | undefined, name: string): number | undefined {
  return c?.ports?.find((p) => p.name === name)?.containerPort;
}

/** The container port a Service or NetworkPolicy port refers to, by name or number: "rpc", "admin" or another. */
function portRole(w: Workload, port: number | string | undefined): string {
  if (port === undefined) return "any";
  if (typeof port === "string") return port === "rpc" || port === "admin" ? port : `unknown port "${port}"`;
  if (port === w.rpcPort) return "rpc";
  if (port === w.adminPort) return "admin";
  return `unknown port ${port}`;
}

function preStopSleepSeconds(c: IContainer): number | undefined {
  const preStop = c.lifecycle?.preStop;
  if (preStop?.sleep) return preStop.sleep.seconds;
  const cmd = preStop?.exec?.command;
  if (cmd?.length === 2 && cmd[0] === "sleep" && /^\d+$/.test(cmd[1] ?? "")) return Number(cmd[1]);
  return undefined;
}

/**
 * Every broken rule, as a readable message; empty when the manifests are
 * fine. Objects are assumed schema-valid (checked separately).
 */
function platformViolations(objects: K8sObject[]): string[] {
  const out: string[] = [];
  const ofKind = <T>(kind: string) => objects.filter((o) => o.kind === kind) as unknown as (T & K8sObject)[];
  const configMaps = new Map(ofKind<IConfigMap>("ConfigMap").map((cm) => [cm.metadata.name, cm]));
  const defaultDrainMs = codeDefault(serverConfigFile, "DRAIN_TIMEOUT_MS");

  // Secrets are created out of band (docs/kubernetes.md); none is rendered.
  for (const s of ofKind<K8sObject>("Secret")) out.push(`${idOf(s)}: Secrets must not be part of the manifests; create them out of band`);
  for (const cm of configMaps.values()) {
    for (const [key, value] of Object.entries(cm.data ?? {})) {
      if (key === "DATABASE_URL" || /:\/\/[^/\s:@]+:[^/\s@]+@/.test(value)) out.push(`ConfigMap/${cm.metadata.name}: ${key} looks like a credential; use the platform-database Secret`);
    }
  }

  const workloads: Workload[] = [];
  for (const d of ofKind<IDeployment>("Deployment")) {
    const name = d.metadata.name;
    const where = `Deployment/${name}`;
    const pod = d.spec?.template.spec;
    const labels = d.spec?.template.metadata?.labels ?? {};
    const containers = pod?.containers ?? [];
    if (labels["app.kubernetes.io/name"] !== name || labels["app.kubernetes.io/part-of"] !== partOf) {
      out.push(`${where}: pods need labels app.kubernetes.io/name=${name} and app.kubernetes.io/part-of=${partOf}`);
    }
    if (!matches(d.spec?.selector.matchLabels, labels)) out.push(`${where}: selector does not match the pod labels`);
    if (!(name in expectedCallers)) out.push(`${where}: not a platform service (${Object.keys(expectedCallers).join(", ")})`);
    if (containers.length !== 1) out.push(`${where}: expected exactly one container`);
    const c = containers[0];
    const w: Workload = { name, deployment: d, labels, container: c, rpcPort: namedPort(c, "rpc"), adminPort: namedPort(c, "admin"), env: new Map() };
    workloads.push(w);
    if (c === undefined || pod === undefined) continue;
    const cw = `${where} container ${c.name}`;
    const env = containerEnv(c, configMaps, cw, out);
    w.env = env;
    const { known, needsDatabase } = serviceEnv(name);

    // Ports and environment.
    if (w.rpcPort === undefined || w.adminPort === undefined) out.push(`${cw}: needs container ports named rpc and admin`);
    if (literal(env, "PORT") !== String(w.rpcPort)) out.push(`${cw}: PORT must equal the rpc container port (${w.rpcPort})`);
    if (literal(env, "ADMIN_PORT") !== String(w.adminPort)) out.push(`${cw}: ADMIN_PORT must equal the admin container port (${w.adminPort})`);
    if (literal(env, "SERVICE") !== name) out.push(`${cw}: SERVICE must be ${name}`);
    const host = literal(env, "HOST");
    if (host !== undefined && host !== "0.0.0.0" && host !== "::") out.push(`${cw}: HOST=${host} is not reachable from the kubelet's probes or other pods; use 0.0.0.0`);
    for (const v of env.keys()) {
      // If a config reads it in a way serviceEnv does not recognise, teach serviceEnv.
      if (!known.has(v)) out.push(`${cw}: ${v} is read by no config of ${name} (a typo is silently ignored)`);
    }
    for (const [v, value] of env) {
      if ("value" in value && /:\/\/[^/\s:@]+:[^/\s@]+@/.test(value.value)) out.push(`${cw}: ${v} holds a credential in plain text`);
    }
    const db = env.get("DATABASE_URL");
    if (db === undefined) {
      if (needsDatabase) out.push(`${cw}: DATABASE_URL is required (secretKeyRef to platform-database)`);
    } else if (!needsDatabase) out.push(`${cw}: DATABASE_URL given to a service that does not use the database`);
    else if (!("secret" in db)) out.push(`${cw}: DATABASE_URL must come from a secretKeyRef, not ${"value" in db ? "a literal" : "elsewhere"}`);
    else if (db.secret.name !== "platform-database" || db.secret.key !== `${name}-url`) {
      out.push(`${cw}: DATABASE_URL must come from Secret platform-database, key ${name}-url (docs/kubernetes.md)`);
    }
    for (const p of c.ports ?? []) if (p.hostPort !== undefined) out.push(`${cw}: hostPort exposes port ${p.containerPort} outside the cluster`);
    if (pod.hostNetwork) out.push(`${where}: hostNetwork exposes every port outside the cluster`);

    // Probes: native gRPC (grpc.health.v1) on the RPC port.
    for (const [probe, p] of [
      ["readinessProbe", c.readinessProbe],
      ["livenessProbe", c.livenessProbe],
    ] as const) {
      if (p?.grpc?.port === undefined || p.grpc.port !== w.rpcPort) out.push(`${cw}: ${probe} must be a gRPC probe on the RPC port ${w.rpcPort}`);
    }
    if (c.startupProbe && c.startupProbe.grpc?.port !== w.rpcPort) out.push(`${cw}: startupProbe must be a gRPC probe on the RPC port ${w.rpcPort}`);

    // Resources.
    const r = c.resources;
    for (const [kind, values] of [
      ["requests", r?.requests],
      ["limits", r?.limits],
    ] as const) {
      for (const res of ["cpu", "memory"]) if (values?.[res] === undefined) out.push(`${cw}: resources.${kind}.${res} is required`);
    }

    // Security context: container settings override the pod's.
    const sc = c.securityContext;
    const psc = pod.securityContext;
    if ((sc?.runAsNonRoot ?? psc?.runAsNonRoot) !== true) out.push(`${cw}: runAsNonRoot must be true`);
    if ((sc?.runAsUser ?? psc?.runAsUser) !== 1000) out.push(`${cw}: runAsUser must be 1000 (the image's node user)`);
    if (sc?.readOnlyRootFilesystem !== true) out.push(`${cw}: readOnlyRootFilesystem must be true`);
    if (sc?.allowPrivilegeEscalation !== false) out.push(`${cw}: allowPrivilegeEscalation must be false`);
    if (sc?.privileged === true) out.push(`${cw}: must not be privileged`);
    if (!sc?.capabilities?.drop?.includes("ALL") || (sc.capabilities.add ?? []).length > 0) out.push(`${cw}: capabilities must drop ALL and add none`);
    if ((sc?.seccompProfile ?? psc?.seccompProfile)?.type !== "RuntimeDefault") out.push(`${cw}: seccompProfile must be RuntimeDefault`);
    const tmp = c.volumeMounts?.find((m) => m.mountPath === "/tmp");
    if (tmp === undefined || pod.volumes?.find((v) => v.name === tmp.name)?.emptyDir === undefined) {
      out.push(`${cw}: needs an emptyDir at /tmp (the root filesystem is read-only)`);
    }

    // Shutdown: preStop sleep, then SIGTERM drains for DRAIN_TIMEOUT_MS, then SIGKILL at the grace period.
    const sleep = preStopSleepSeconds(c);
    if (sleep === undefined || sleep < 1) out.push(`${cw}: needs a preStop sleep of a few seconds (endpoints are removed before the drain starts)`);
    const drainRaw = env.get("DRAIN_TIMEOUT_MS");
    let drainMs = defaultDrainMs;
    if (drainRaw !== undefined) {
      if (!("value" in drainRaw) || !/^\d+$/.test(drainRaw.value)) out.push(`${cw}: DRAIN_TIMEOUT_MS must be a literal number of milliseconds`);
      else drainMs = Number(drainRaw.value);
    }
    const grace = pod.terminationGracePeriodSeconds ?? 30;
    const needed = (sleep ?? 0) + drainMs / 1000 + shutdownSlackSeconds;
    if (grace <= needed) {
      out.push(`${where}: terminationGracePeriodSeconds (${grace}) must exceed preStop sleep (${sleep ?? 0} s) + DRAIN_TIMEOUT_MS (${drainMs / 1000} s) + ${shutdownSlackSeconds} s`);
    }

    // Image: pinned by the overlay.
    const image = splitImage(c.image ?? "");
    if ((image.tag === undefined || image.tag === "latest") && image.digest === undefined) out.push(`${cw}: image ${c.image} needs a tag other than latest (set it in the overlay's images)`);

    // Metrics on the admin port.
    const ann = d.spec?.template.metadata?.annotations ?? {};
    if (ann["prometheus.io/scrape"] !== "true" || ann["prometheus.io/port"] !== String(w.adminPort) || ann["prometheus.io/path"] !== "/metrics") {
      out.push(`${where}: pods need prometheus.io/scrape "true", port "${w.adminPort}" (admin) and path /metrics`);
    }
  }
  for (const name of Object.keys(expectedCallers)) {
    if (!workloads.some((w) => w.name === name)) out.push(`Deployment/${name}: missing`);
  }

  // One HPA and one PDB per Deployment, consistent with each other.
  const hpas = ofKind<IHorizontalPodAutoscaler>("HorizontalPodAutoscaler");
  const pdbs = ofKind<IPodDisruptionBudget>("PodDisruptionBudget");
  const maxReplicas = new Map<string, number>();
  for (const w of workloads) {
    const where = `Deployment/${w.name}`;
    const own = hpas.filter((h) => h.spec?.scaleTargetRef.kind === "Deployment" && h.spec.scaleTargetRef.name === w.name);
    const hpa = own[0];
    if (own.length !== 1 || hpa?.spec === undefined) out.push(`${where}: needs exactly one HorizontalPodAutoscaler (has ${own.length})`);
    else {
      const min = hpa.spec.minReplicas ?? 1;
      maxReplicas.set(w.name, hpa.spec.maxReplicas);
      if (!hpa.spec.metrics?.some((m) => m.type === "Resource" && m.resource?.name === "cpu")) out.push(`HorizontalPodAutoscaler/${hpa.metadata.name}: needs a CPU metric`);
      if (min > hpa.spec.maxReplicas) out.push(`HorizontalPodAutoscaler/${hpa.metadata.name}: minReplicas > maxReplicas`);
      if (w.deployment.spec?.replicas !== min) out.push(`${where}: replicas (${w.deployment.spec?.replicas}) must equal its HPA's minReplicas (${min})`);
      const ownPdbs = pdbs.filter((p) => matches(p.spec?.selector?.matchLabels, w.labels) && Object.keys(p.spec?.selector?.matchLabels ?? {}).length > 0);
      const pdb = ownPdbs[0];
      if (ownPdbs.length !== 1 || pdb?.spec === undefined) out.push(`${where}: needs exactly one PodDisruptionBudget (has ${ownPdbs.length})`);
      else {
        const { minAvailable, maxUnavailable } = pdb.spec;
        const blocks = typeof minAvailable === "number" ? minAvailable >= min : typeof maxUnavailable === "number" ? maxUnavailable < 1 : true;
        if (blocks) out.push(`PodDisruptionBudget/${pdb.metadata.name}: must allow one eviction at ${min} replicas (use integer minAvailable < ${min} or maxUnavailable >= 1)`);
      }
    }
  }

  // Database connections at the largest scale, including the rolling-update surge.
  let connections = 0;
  for (const w of workloads) {
    if (!serviceEnv(w.name).needsDatabase) continue;
    const pool = Number(literal(w.env, "DB_POOL_MAX") ?? codeDefault(`services/${w.name}/src/config.ts`, "DB_POOL_MAX"));
    const surge = w.deployment.spec?.strategy?.rollingUpdate?.maxSurge;
    // A percentage surge is counted as one pod: right at our replica counts.
    connections += ((maxReplicas.get(w.name) ?? 0) + (typeof surge === "number" ? surge : 1)) * pool;
  }
  if (connections > databaseConnectionBudget) {
    out.push(`database: (maxReplicas + maxSurge) x DB_POOL_MAX adds up to ${connections} connections, over the budget of ${databaseConnectionBudget} (docs/scaling.md)`);
  }

  // Services: what each selects, and what may leave the cluster.
  const services = ofKind<IService>("Service");
  const selected = (s: IService) => workloads.filter((w) => Object.keys(s.spec?.selector ?? {}).length > 0 && matches(s.spec?.selector, w.labels));
  const exposure = (s: IService & K8sObject, how: string) => {
    const targets = selected(s);
    if (targets.length !== 1 || targets[0]?.name !== "gateway") out.push(`${idOf(s)}: ${how} exposes ${targets.map((t) => t.name).join(", ") || "nothing"}; only the gateway may be exposed`);
    for (const t of targets) {
      for (const p of s.spec?.ports ?? []) {
        const role = portRole(t, p.targetPort ?? p.port);
        if (role !== "rpc") out.push(`${idOf(s)}: ${how} port ${p.port} targets the ${role} port of ${t.name}; only the RPC port may be exposed`);
      }
    }
  };
  for (const s of services) {
    const type = s.spec?.type ?? "ClusterIP";
    if (type === "ExternalName" || (s.spec?.externalIPs ?? []).length > 0) out.push(`${idOf(s)}: ExternalName and externalIPs are not used by the platform`);
    if (type === "LoadBalancer" || type === "NodePort") exposure(s, type);
    const targets = selected(s);
    if (targets.length === 0) out.push(`${idOf(s)}: selects no Deployment`);
    for (const t of targets) {
      for (const p of s.spec?.ports ?? []) {
        const role = portRole(t, p.targetPort ?? p.port);
        // The admin port (/metrics, /admin) is scraped from the pods, never published.
        if (role !== "rpc") out.push(`${idOf(s)}: port ${p.port} targets the ${role} port of ${t.name}; Services publish only the RPC port`);
      }
    }
  }
  for (const ing of ofKind<IIngress>("Ingress")) {
    const backends = [ing.spec?.defaultBackend, ...(ing.spec?.rules ?? []).flatMap((r) => r.http?.paths.map((p) => p.backend) ?? [])];
    for (const b of backends) {
      if (b === undefined) continue;
      const s = services.find((x) => x.metadata.name === b.service?.name);
      if (s === undefined) {
        out.push(`${idOf(ing)}: backend ${b.service?.name ?? "(resource)"} is not a rendered Service`);
        continue;
      }
      const port = s.spec?.ports?.find((p) => p.name === b.service?.port?.name || p.port === b.service?.port?.number);
      exposure({ ...s, spec: { ...s.spec, ports: port ? [port] : [] } }, "Ingress");
      if (port === undefined) out.push(`${idOf(ing)}: backend port is not a port of Service/${s.metadata.name}`);
    }
  }

  // The call graph, from the *_URL settings: each must name a Service port that reaches the callee's RPC port.
  const callers = new Map<string, Set<string>>(Object.keys(expectedCallers).map((n) => [n, new Set()]));
  for (const w of workloads) {
    for (const [v, value] of w.env) {
      if (!v.endsWith("_URL") || v === "DATABASE_URL") continue;
      if (!("value" in value)) {
        out.push(`Deployment/${w.name}: ${v} must be a literal URL`);
        continue;
      }
      let url: URL;
      try {
        url = new URL(value.value);
      } catch {
        out.push(`Deployment/${w.name}: ${v}=${value.value} is not a URL`);
        continue;
      }
      const s = services.find((x) => x.metadata.name === url.hostname && (x.spec?.type ?? "ClusterIP") === "ClusterIP");
      const port = s?.spec?.ports?.find((p) => p.port === Number(url.port || 80));
      const callee = s ? selected(s)[0] : undefined;
      if (s === undefined || port === undefined || callee === undefined || portRole(callee, port.targetPort ?? port.port) !== "rpc") {
        out.push(`Deployment/${w.name}: ${v}=${value.value} does not reach a platform service's RPC port through a ClusterIP Service`);
      } else callers.get(callee.name)?.add(w.name);
    }
  }
  for (const [callee, expected] of Object.entries(expectedCallers)) {
    const actual = [...(callers.get(callee) ?? [])].sort();
    if (actual.join() !== [...expected].sort().join()) out.push(`call graph: ${callee} is called by [${actual.join(", ")}], expected [${expected.join(", ")}]`);
  }

  out.push(...networkPolicyViolations(ofKind<INetworkPolicy>("NetworkPolicy"), workloads));
  return out;
}

/**
 * Ingress NetworkPolicies: every pod is isolated; the gateway's RPC port is
 * open to anyone; every other RPC port only to the service's callers (same
 * namespace); admin ports only to another namespace (monitoring), never to
 * the world. Selectors the checker cannot evaluate (matchExpressions) are
 * violations rather than guesses.
 */
function networkPolicyViolations(policies: (INetworkPolicy & K8sObject)[], workloads: Workload[]): string[] {
  const out: string[] = [];
  const ingressTyped = policies.filter((p) => (p.spec?.policyTypes ?? ["Ingress"]).includes("Ingress"));
  if (!ingressTyped.some((p) => Object.keys(p.spec?.podSelector ?? {}).length === 0 && (p.spec?.ingress ?? []).length === 0)) {
    out.push("NetworkPolicy: needs a default-deny-ingress policy (podSelector {}, no ingress rules)");
  }
  for (const p of policies) {
    const selectors = [p.spec?.podSelector, ...(p.spec?.ingress ?? []).flatMap((r) => (r.from ?? []).flatMap((f) => [f.podSelector, f.namespaceSelector]))];
    if (selectors.some((s) => (s?.matchExpressions ?? []).length > 0)) out.push(`${idOf(p)}: matchExpressions are not supported by the checker; use matchLabels`);
  }
  for (const w of workloads) {
    const own = ingressTyped.filter((p) => matches(p.spec?.podSelector?.matchLabels, w.labels));
    if (own.length === 0) out.push(`Deployment/${w.name}: no NetworkPolicy selects its pods, so all ingress is allowed`);
    const callers = expectedCallers[w.name] ?? [];
    const allowedCallers = new Set<string>();
    let public_ = false;
    for (const p of own) {
      for (const rule of p.spec?.ingress ?? []) {
        const where = `${idOf(p)} (for ${w.name})`;
        if ((rule.ports ?? []).length === 0) {
          out.push(`${where}: a rule without ports opens every port, the admin port included`);
          continue;
        }
        const roles = (rule.ports ?? []).map((port) => portRole(w, port.port));
        for (const role of roles) if (role !== "rpc" && role !== "admin") out.push(`${where}: rule opens ${role}`);
        const from = rule.from ?? [];
        if (from.length === 0) {
          // Any source, from anywhere.
          if (w.name !== "gateway" || roles.some((r) => r !== "rpc")) out.push(`${where}: opens ${roles.join(", ")} of ${w.name} to any source; only the gateway's RPC port is public`);
          else public_ = true;
          continue;
        }
        for (const peer of from) {
          if (peer.ipBlock !== undefined || peer.namespaceSelector !== undefined) {
            // From outside the namespace: scraping the admin port, or the public gateway.
            const ok = roles.every((r) => r === "admin") || (w.name === "gateway" && roles.every((r) => r === "rpc"));
            if (!ok) out.push(`${where}: opens ${roles.join(", ")} of ${w.name} to sources outside the namespace`);
            continue;
          }
          const source = peer.podSelector?.matchLabels?.["app.kubernetes.io/name"];
          if (roles.includes("admin")) out.push(`${where}: opens the admin port of ${w.name} to pods in the namespace`);
          if (source === undefined) out.push(`${where}: opens ${w.name} to every pod in the namespace`);
          else if (w.name !== "gateway" && !callers.includes(source)) out.push(`${where}: lets ${source} call ${w.name}; its callers are ${callers.join(", ")}`);
          else if (roles.includes("rpc")) allowedCallers.add(source);
        }
      }
    }
    if (w.name === "gateway" && !public_) out.push("NetworkPolicy: the gateway's RPC port must be open to any source");
    for (const c of callers) if (!allowedCallers.has(c)) out.push(`NetworkPolicy: ${c} cannot reach ${w.name}'s RPC port`);
  }
  return out;
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

for (const overlay of overlays) {
  describe(`deploy/k8s/overlays/${overlay}`, () => {
    test("renders", () => {
      const objects = render(overlay);
      const namespace = overlay === "dev" ? "resilient-platform-dev" : "resilient-platform";
      assert.ok(objects.length > 20, `only ${objects.length} objects`);
      for (const o of objects) {
        if (o.kind === "Namespace") assert.equal(o.metadata.name, namespace);
        else assert.equal(o.metadata.namespace, namespace, `${idOf(o)} is in the overlay's namespace`);
        assert.equal(o.metadata.labels?.["app.kubernetes.io/part-of"], partOf, `${idOf(o)} is labelled part-of=${partOf}`);
      }
    });

    test("every object is valid against the Kubernetes schemas", async () => {
      assert.deepEqual(await schemaErrors(render(overlay)), []);
    });

    test("no object has unknown fields", () => {
      assert.deepEqual(unknownFieldErrors(render(overlay)), []);
    });

    test("the platform's rules hold", () => {
      assert.deepEqual(platformViolations(render(overlay)), []);
    });
  });
}

function deployments(objects: K8sObject[]): (IDeployment & K8sObject)[] {
  return objects.filter((o) => o.kind === "Deployment") as unknown as (IDeployment & K8sObject)[];
}

function hpa(objects: K8sObject[], name: string): IHorizontalPodAutoscaler & K8sObject {
  const h = objects.find((o) => o.kind === "HorizontalPodAutoscaler" && o.metadata.name === name);
  assert.ok(h, `HorizontalPodAutoscaler/${name}`);
  return h as unknown as IHorizontalPodAutoscaler & K8sObject;
}

test("dev: one replica each, small pods, gateway on a NodePort, image :dev", () => {
  const objects = render("dev");
  for (const d of deployments(objects)) {
    assert.equal(d.spec?.replicas, 1, d.metadata.name);
    assert.equal(hpa(objects, d.metadata.name).spec?.minReplicas, 1);
    assert.equal(d.spec?.template.spec?.containers[0]?.image, "resilient-platform:dev");
    assert.equal(d.spec?.template.spec?.containers[0]?.resources?.requests?.["cpu"], "50m");
  }
  const exposed = objects.filter((o) => o.kind === "Service" && (o as unknown as IService).spec?.type !== "ClusterIP" && (o as unknown as IService).spec?.type !== undefined);
  assert.deepEqual(exposed.map((s) => `${s.metadata.name}:${(s as unknown as IService).spec?.type}`), ["gateway-nodeport:NodePort"]);
  const common = objects.find((o) => o.kind === "ConfigMap" && o.metadata.name === "platform-common") as unknown as IConfigMap | undefined;
  assert.equal(common?.data?.["LOG_LEVEL"], "debug");
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
  assert.equal(hpa(objects, "gateway").spec?.maxReplicas, 10);
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
  const compose = parseAllDocuments(readFileSync(join(root, "docker-compose.yml"), "utf8"))[0]?.toJS() as { services: Record<string, { environment?: Record<string, unknown> }> };
  for (const [name, svc] of Object.entries(compose.services)) {
    if (svc.environment?.["SERVICE"] === undefined) continue; // PostgreSQL, Prometheus, Grafana
    fromCompose[name] = Object.fromEntries(Object.entries(svc.environment ?? {}).filter(([k]) => isIsolationSetting(k)).map(([k, v]) => [k, String(v)]));
  }
  for (const overlay of overlays) {
    const objects = render(overlay);
    const configMaps = new Map((objects.filter((o) => o.kind === "ConfigMap") as unknown as (IConfigMap & K8sObject)[]).map((cm) => [cm.metadata.name, cm]));
    const fromK8s: Record<string, Record<string, string>> = {};
    for (const d of deployments(objects)) {
      const problems: string[] = [];
      const env = containerEnv(container(objects, d.metadata.name), configMaps, d.metadata.name, problems);
      fromK8s[d.metadata.name] = Object.fromEntries([...env].filter(([k]) => isIsolationSetting(k)).map(([k, v]) => [k, "value" in v ? v.value : JSON.stringify(v)]));
    }
    assert.deepEqual(fromK8s, fromCompose, `${overlay}: isolation settings differ from docker-compose.yml`);
  }
});

/** Finds an object in a rendered copy, for mutation. */
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

function policy(objects: K8sObject[], name: string): INetworkPolicy {
  return find<INetworkPolicy>(objects, "NetworkPolicy", name);
}

/** Each breaks one rule on a copy of the production render; the checker must name it. */
const brokenCopies: [string, RegExp, (objects: K8sObject[]) => void][] = [
  ["no readiness probe", /checkout.*readinessProbe must be a gRPC probe/, (o) => delete container(o, "checkout").readinessProbe],
  ["liveness probe on the admin port", /orders.*livenessProbe must be a gRPC probe on the RPC port 8082/, (o) => (container(o, "orders").livenessProbe = { grpc: { port: 9082 } })],
  ["HTTP readiness probe instead of gRPC", /gateway.*readinessProbe must be a gRPC probe/, (o) => (container(o, "gateway").readinessProbe = { httpGet: { path: "/readyz", port: 9080 } })],
  ["runs as root", /pricing.*runAsNonRoot must be true/, (o) => (container(o, "pricing").securityContext = { ...container(o, "pricing").securityContext, runAsNonRoot: false })],
  ["writable root filesystem", /gateway.*readOnlyRootFilesystem must be true/, (o) => (container(o, "gateway").securityContext = { ...container(o, "gateway").securityContext, readOnlyRootFilesystem: false })],
  ["no capability drop", /checkout.*capabilities must drop ALL/, (o) => (container(o, "checkout").securityContext = { ...container(o, "checkout").securityContext, capabilities: {} })],
  ["no memory limit", /orders.*resources\.limits\.memory is required/, (o) => delete container(o, "orders").resources?.limits?.["memory"]],
  ["no /tmp volume", /pricing.*emptyDir at \/tmp/, (o) => (container(o, "pricing").volumeMounts = [])],
  [
    "grace period shorter than the drain",
    /Deployment\/gateway: terminationGracePeriodSeconds \(10\) must exceed/,
    (o) => {
      const spec = find<IDeployment>(o, "Deployment", "gateway").spec?.template.spec;
      if (spec) spec.terminationGracePeriodSeconds = 10;
    },
  ],
  [
    "drain raised in the ConfigMap past the grace period",
    /Deployment\/orders: terminationGracePeriodSeconds \(30\) must exceed preStop sleep \(5 s\) \+ DRAIN_TIMEOUT_MS \(60 s\)/,
    (o) => {
      const cm = find<IConfigMap>(o, "ConfigMap", "platform-common");
      cm.data = { ...cm.data, DRAIN_TIMEOUT_MS: "60000" };
    },
  ],
  ["no preStop sleep", /checkout.*preStop sleep/, (o) => delete container(o, "checkout").lifecycle],
  [
    "DATABASE_URL as a literal",
    /orders.*DATABASE_URL must come from a secretKeyRef, not a literal/,
    (o) => {
      const e = container(o, "orders").env?.find((x) => x.name === "DATABASE_URL");
      assert.ok(e);
      delete e.valueFrom;
      e.value = "postgres://orders:hunter2@db:5432/platform";
    },
  ],
  [
    "another service's database credentials",
    /pricing.*DATABASE_URL must come from Secret platform-database, key pricing-url/,
    (o) => {
      const ref = container(o, "pricing").env?.find((x) => x.name === "DATABASE_URL")?.valueFrom?.secretKeyRef;
      assert.ok(ref);
      ref.key = "orders-url";
    },
  ],
  [
    "DATABASE_URL in the ConfigMap",
    /ConfigMap\/platform-common: DATABASE_URL looks like a credential/,
    (o) => {
      const cm = find<IConfigMap>(o, "ConfigMap", "platform-common");
      cm.data = { ...cm.data, DATABASE_URL: "postgres://x:y@db/platform" };
    },
  ],
  ["a Secret in the manifests", /Secret\/platform-database: Secrets must not be part of the manifests/, (o) => o.push({ apiVersion: "v1", kind: "Secret", metadata: { name: "platform-database" } })],
  ["misspelt variable", /gateway.*DRAIN_TIMEOUT is read by no config/, (o) => container(o, "gateway").env?.push({ name: "DRAIN_TIMEOUT", value: "5000" })],
  ["setting for a dependency the service does not call", /gateway.*ORDERS_MAX_QUEUE is read by no config/, (o) => container(o, "gateway").env?.push({ name: "ORDERS_MAX_QUEUE", value: "10" })],
  [
    "internal service behind a LoadBalancer",
    /Service\/orders: LoadBalancer exposes orders; only the gateway may be exposed/,
    (o) => {
      const s = find<IService>(o, "Service", "orders");
      if (s.spec) s.spec.type = "LoadBalancer";
    },
  ],
  [
    "load balancer to the admin port",
    /Service\/gateway-public: LoadBalancer port 80 targets the admin port of gateway/,
    (o) => {
      const p = find<IService>(o, "Service", "gateway-public").spec?.ports?.[0];
      if (p) p.targetPort = 9080;
    },
  ],
  [
    "Ingress to an internal service",
    /Service\/checkout: Ingress exposes checkout/,
    (o) =>
      o.push({
        apiVersion: "networking.k8s.io/v1",
        kind: "Ingress",
        metadata: { name: "leak" },
        spec: { rules: [{ http: { paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: "checkout", port: { number: 8081 } } } }] } }] },
      }),
  ],
  ["no PDB", /Deployment\/pricing: needs exactly one PodDisruptionBudget \(has 0\)/, (o) => o.splice(o.indexOf(find(o, "PodDisruptionBudget", "pricing")), 1)],
  [
    "two HPAs",
    /Deployment\/gateway: needs exactly one HorizontalPodAutoscaler \(has 2\)/,
    (o) => {
      const copy = structuredClone(find(o, "HorizontalPodAutoscaler", "gateway"));
      copy.metadata.name = "gateway-2";
      o.push(copy);
    },
  ],
  [
    "PDB that blocks every eviction",
    /PodDisruptionBudget\/checkout: must allow one eviction/,
    (o) => {
      const spec = find<IPodDisruptionBudget>(o, "PodDisruptionBudget", "checkout").spec;
      if (spec) {
        delete spec.maxUnavailable;
        spec.minAvailable = 3;
      }
    },
  ],
  [
    "too many database connections",
    /database: .* adds up to 172 connections, over the budget/,
    (o) => {
      const spec = find<IHorizontalPodAutoscaler>(o, "HorizontalPodAutoscaler", "orders").spec;
      if (spec) spec.maxReplicas = 20;
    },
  ],
  [
    "orders reachable from the gateway",
    /lets gateway call orders; its callers are checkout/,
    (o) => policy(o, "orders-ingress").spec?.ingress?.[0]?.from?.push({ podSelector: { matchLabels: { "app.kubernetes.io/name": "gateway" } } }),
  ],
  [
    "pricing reachable from another namespace",
    /opens rpc of pricing to sources outside the namespace/,
    (o) => policy(o, "pricing-ingress").spec?.ingress?.[0]?.from?.push({ namespaceSelector: {} }),
  ],
  ["policy rule without ports", /checkout-ingress.*a rule without ports opens every port/, (o) => delete policy(o, "checkout-ingress").spec?.ingress?.[0]?.ports],
  [
    "admin port open to the world",
    /opens admin of gateway to any source/,
    (o) => policy(o, "gateway-ingress").spec?.ingress?.push({ ports: [{ port: "admin" }] }),
  ],
  ["no default deny", /needs a default-deny-ingress policy/, (o) => o.splice(o.indexOf(find(o, "NetworkPolicy", "default-deny-ingress")), 1)],
  ["caller cut off", /NetworkPolicy: orders cannot reach pricing's RPC port/, (o) => policy(o, "pricing-ingress").spec?.ingress?.[0]?.from?.pop()],
  [
    "wrong dependency URL",
    /Deployment\/checkout: ORDERS_URL=http:\/\/orders:9082 does not reach/,
    (o) => {
      const e = container(o, "checkout").env?.find((x) => x.name === "ORDERS_URL");
      if (e) e.value = "http://orders:9082";
    },
  ],
  ["untagged image", /gateway.*needs a tag other than latest/, (o) => (container(o, "gateway").image = "resilient-platform")],
];

describe("the rule checker, on broken copies of the production render", () => {
  for (const [label, expected, mutate] of brokenCopies) {
    test(label, () => {
      const objects = render("production");
      mutate(objects);
      const found = platformViolations(objects);
      assert.ok(
        found.some((v) => expected.test(v)),
        `expected a violation matching ${expected}, got:\n  ${found.join("\n  ") || "(none)"}`,
      );
    });
  }
});

describe("the schema checks, on broken copies", () => {
  test("a wrongly typed field fails the schema", async () => {
    const objects = render("production");
    const port = container(objects, "gateway").ports?.[0];
    assert.ok(port);
    (port as { containerPort: unknown }).containerPort = "8080";
    const errors = await schemaErrors(objects);
    assert.ok(
      errors.some((e) => /Deployment\/gateway: .*containerPort must be integer/.test(e)),
      errors.join("\n"),
    );
  });

  test("a missing required field fails the schema", async () => {
    const objects = render("production");
    const np = policy(objects, "gateway-ingress") as unknown as { spec: Record<string, unknown> };
    delete np.spec["podSelector"];
    const errors = await schemaErrors(objects);
    assert.ok(errors.some((e) => /NetworkPolicy\/gateway-ingress: .*podSelector/.test(e)), errors.join("\n"));
  });

  test("an unknown kind has no schema", async () => {
    const errors = await schemaErrors([{ apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "w" } }]);
    assert.deepEqual(errors, ["Widget/w: no schema for example.com/v1 Widget"]);
  });

  test("a misspelt field is an unknown field", () => {
    const objects = render("production");
    const c = container(objects, "checkout") as unknown as Record<string, unknown>;
    c["readinessprobe"] = c["readinessProbe"];
    delete c["readinessProbe"];
    const errors = unknownFieldErrors(objects);
    assert.equal(errors.length, 1, errors.join("\n"));
    assert.match(errors[0] ?? "", /^Deployment\/checkout: .*'"?readinessprobe"?' does not exist/);
  });
});

describe("the kustomize loader", () => {
  function withKustomization(files: Record<string, string>, fn: (dir: string) => void): void {
    const dir = mkdtempSync(join(tmpdir(), "kustomize-"));
    try {
      for (const [name, text] of Object.entries(files)) {
        mkdirSync(join(dir, name, ".."), { recursive: true });
        writeFileSync(join(dir, name), text);
      }
      fn(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  X: '1'\n";

  test("refuses kustomize fields it does not implement", () => {
    withKustomization({ "kustomization.yaml": "kind: Kustomization\nresources: [cm.yaml]\ncommonLabels:\n  a: b\n", "cm.yaml": cm }, (dir) => {
      assert.throws(() => buildKustomization(dir), /"commonLabels" is not supported/);
    });
    withKustomization({ "kustomization.yaml": "kind: Kustomization\nresources: [cm.yaml]\npatches:\n  - path: p.yaml\n", "cm.yaml": cm }, (dir) => {
      assert.throws(() => buildKustomization(dir), /"path" is not supported/);
    });
  });

  test("refuses a patch that matches nothing or a path that does not exist", () => {
    const patch = (target: string, path: string) =>
      `kind: Kustomization\nresources: [cm.yaml]\npatches:\n  - target: {${target}}\n    patch: |-\n      - op: replace\n        path: ${path}\n        value: '2'\n`;
    withKustomization({ "kustomization.yaml": patch("kind: ConfigMap, name: b", "/data/X"), "cm.yaml": cm }, (dir) => {
      assert.throws(() => buildKustomization(dir), /matches nothing/);
    });
    withKustomization({ "kustomization.yaml": patch("kind: ConfigMap", "/data/Y"), "cm.yaml": cm }, (dir) => {
      assert.throws(() => buildKustomization(dir), /does not exist/);
    });
    withKustomization({ "kustomization.yaml": patch("kind: ConfigMap", "/data/X"), "cm.yaml": cm }, (dir) => {
      const [o] = buildKustomization(dir);
      assert.deepEqual((o as unknown as IConfigMap).data, { X: "2" });
    });
  });

  test("applies namespace and images, and refuses duplicates", () => {
    const deployment =
      "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  selector: {}\n  template:\n    spec:\n      containers:\n        - name: c\n          image: reg:5000/app:1\n";
    withKustomization(
      {
        "base/kustomization.yaml": "kind: Kustomization\nresources: [d.yaml]\n",
        "base/d.yaml": deployment,
        "kustomization.yaml": "kind: Kustomization\nnamespace: ns\nresources: [base]\nimages:\n  - name: reg:5000/app\n    newTag: '2'\n",
      },
      (dir) => {
        const [o] = buildKustomization(dir);
        assert.equal(o?.metadata.namespace, "ns");
        assert.equal((o as unknown as IDeployment).spec?.template.spec?.containers[0]?.image, "reg:5000/app:2");
      },
    );
    withKustomization({ "kustomization.yaml": "kind: Kustomization\nresources: [cm.yaml, cm.yaml]\n", "cm.yaml": cm }, (dir) => {
      assert.throws(() => buildKustomization(dir), /defined twice/);
    });
  });
});
