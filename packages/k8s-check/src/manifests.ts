/**
 * The rendered objects as the policies see them: each Deployment's pod, its
 * single container, its named ports and its environment as Kubernetes builds
 * it (envFrom ConfigMaps first, then `env`, which takes precedence).
 */
import type { IDeployment } from "kubernetes-models/apps/v1/Deployment";
import type { IConfigMap } from "kubernetes-models/v1/ConfigMap";
import type { IContainer } from "kubernetes-models/v1/Container";
import type { IPodSpec } from "kubernetes-models/v1/PodSpec";
import type { PlatformFacts } from "./facts.js";
import type { K8sObject } from "./objects.js";

export type EnvValue = { value: string } | { secret: { name: string; key: string } } | { other: string };

export interface Workload {
  name: string;
  deployment: IDeployment & K8sObject;
  labels: Record<string, string>;
  pod: IPodSpec | undefined;
  container: IContainer | undefined;
  rpcPort: number | undefined;
  adminPort: number | undefined;
  env: Map<string, EnvValue>;
  /** Problems met while building `env` (an envFrom that is not a rendered ConfigMap). */
  envProblems: string[];
}

export interface Manifests {
  objects: K8sObject[];
  facts: PlatformFacts;
  configMaps: Map<string, IConfigMap & K8sObject>;
  workloads: Workload[];
}

export function ofKind<T>(objects: K8sObject[], kind: string): (T & K8sObject)[] {
  return objects.filter((o) => o.kind === kind) as unknown as (T & K8sObject)[];
}

/** Whether every label of `selector` is on `labels` (matchLabels semantics). */
export function matches(selector: Record<string, string> | undefined, labels: Record<string, string>): boolean {
  return Object.entries(selector ?? {}).every(([k, v]) => labels[k] === v);
}

export function literal(env: Map<string, EnvValue>, name: string): string | undefined {
  const v = env.get(name);
  return v !== undefined && "value" in v ? v.value : undefined;
}

/** "Deployment/x container c": where container messages point. */
export function containerWhere(w: Workload): string {
  return `Deployment/${w.name} container ${w.container?.name ?? "?"}`;
}

/** The container port a Service or NetworkPolicy port refers to, by name or number: "rpc", "admin" or another. */
export function portRole(w: Workload, port: number | string | undefined): string {
  if (port === undefined) return "any";
  if (typeof port === "string") return port === "rpc" || port === "admin" ? port : `unknown port "${port}"`;
  if (port === w.rpcPort) return "rpc";
  if (port === w.adminPort) return "admin";
  return `unknown port ${port}`;
}

function containerEnv(c: IContainer, configMaps: Map<string, IConfigMap>, where: string, problems: string[]): Map<string, EnvValue> {
  const env = new Map<string, EnvValue>();
  for (const from of c.envFrom ?? []) {
    const ref = from.configMapRef?.name;
    if (ref === undefined) {
      problems.push(`${where}: envFrom may only reference ConfigMaps`);
      continue;
    }
    const cm = configMaps.get(ref);
    if (cm === undefined) {
      problems.push(`${where}: envFrom references ConfigMap ${ref}, which is not rendered`);
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

function namedPort(c: IContainer | undefined, name: string): number | undefined {
  return c?.ports?.find((p) => p.name === name)?.containerPort;
}

export function readManifests(objects: K8sObject[], facts: PlatformFacts): Manifests {
  const configMaps = new Map(ofKind<IConfigMap>(objects, "ConfigMap").map((cm) => [cm.metadata.name, cm]));
  const workloads = ofKind<IDeployment>(objects, "Deployment").map((d): Workload => {
    const pod = d.spec?.template.spec;
    const container = pod?.containers[0];
    const w: Workload = {
      name: d.metadata.name,
      deployment: d,
      labels: d.spec?.template.metadata?.labels ?? {},
      pod,
      container,
      rpcPort: namedPort(container, "rpc"),
      adminPort: namedPort(container, "admin"),
      env: new Map(),
      envProblems: [],
    };
    if (container !== undefined) w.env = containerEnv(container, configMaps, containerWhere(w), w.envProblems);
    return w;
  });
  return { objects, facts, configMaps, workloads };
}
