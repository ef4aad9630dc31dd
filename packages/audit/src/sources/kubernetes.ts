import { join } from "node:path";
import { findOverlays, isRecord, renderKustomization, type K8sObject } from "@platform/k8s-check/render";
import type { SetVariable, Target } from "../model.js";
import { repoRoot, shownPath } from "../service-modules.js";
import { buildTarget, secretPlaceholder, type DeployedService } from "./build-target.js";

interface EnvEntry {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name?: string; key?: string } };
}

/**
 * Each Deployment of a rendered overlay whose container sets SERVICE (the
 * image's entry point), with its environment as Kubernetes builds it:
 * envFrom ConfigMaps first, then `env`, which takes precedence. A value from
 * a Secret becomes a placeholder, never read.
 */
export function kubernetesServices(overlayDir: string): DeployedService[] {
  const objects = renderKustomization(overlayDir);
  const shown = shownPath(overlayDir);
  const configMaps = new Map(objects.filter((o) => o.kind === "ConfigMap").map((o) => [o.metadata.name, o]));
  const out: DeployedService[] = [];
  for (const d of objects.filter((o) => o.kind === "Deployment")) {
    const container = containerOf(d);
    if (container === undefined) continue;
    const env: Record<string, SetVariable> = {};
    for (const from of (container["envFrom"] ?? []) as { configMapRef?: { name?: string }; prefix?: string }[]) {
      const cm = configMaps.get(from.configMapRef?.name ?? "");
      const data = cm && isRecord(cm["data"]) ? cm["data"] : {};
      for (const [k, v] of Object.entries(data)) env[`${from.prefix ?? ""}${k}`] = { value: String(v), source: `${shown}: ConfigMap/${cm!.metadata.name}` };
    }
    for (const e of (container["env"] ?? []) as EnvEntry[]) {
      const where = `${shown}: Deployment/${d.metadata.name} env`;
      if (e.value !== undefined) env[e.name] = { value: e.value, source: where };
      else if (e.valueFrom?.secretKeyRef)
        env[e.name] = { value: secretPlaceholder(e.name), source: `${where} (Secret ${e.valueFrom.secretKeyRef.name}/${e.valueFrom.secretKeyRef.key})` };
    }
    secretFiles(d, container, env);
    const name = env["SERVICE"]?.value;
    if (name !== undefined) out.push({ name, env, where: `${shown}: Deployment/${d.metadata.name}` });
  }
  return out;
}

/**
 * `<VAR>_FILE` naming a file mounted from a Secret becomes `<VAR>` with a
 * placeholder, saying which Secret and key it comes from: never read.
 */
function secretFiles(d: K8sObject, container: Record<string, unknown>, env: Record<string, SetVariable>): void {
  const spec = d["spec"];
  const template = isRecord(spec) ? spec["template"] : undefined;
  const pod = isRecord(template) ? template["spec"] : undefined;
  const volumes = (isRecord(pod) && Array.isArray(pod["volumes"]) ? pod["volumes"] : []) as {
    name: string;
    secret?: { secretName?: string; items?: { key: string; path: string }[] };
  }[];
  const mounts = (Array.isArray(container["volumeMounts"]) ? container["volumeMounts"] : []) as { name: string; mountPath: string }[];
  for (const [key, set] of Object.entries(env)) {
    if (!key.endsWith("_FILE") || key === "_FILE") continue;
    const variable = key.slice(0, -"_FILE".length);
    const mount = mounts.find((m) => set.value.startsWith(`${m.mountPath.replace(/\/$/, "")}/`));
    const secret = volumes.find((v) => v.name === mount?.name)?.secret;
    const file = mount ? set.value.slice(mount.mountPath.replace(/\/$/, "").length + 1) : "";
    const item = secret?.items?.find((i) => i.path === file);
    const from = secret ? ` (Secret ${secret.secretName}/${item?.key ?? file})` : ` (file ${set.value})`;
    delete env[key];
    env[variable] = { value: secretPlaceholder(variable), source: `${set.source}${from}` };
  }
}

function containerOf(d: K8sObject): Record<string, unknown> | undefined {
  const spec = d["spec"];
  const template = isRecord(spec) ? spec["template"] : undefined;
  const pod = isRecord(template) ? template["spec"] : undefined;
  const containers = isRecord(pod) ? pod["containers"] : undefined;
  return Array.isArray(containers) && isRecord(containers[0]) ? containers[0] : undefined;
}

/** Every overlay under deploy/k8s: each kustomization that no other includes. */
export function shippedOverlays(k8sDir = join(repoRoot, "deploy", "k8s")): string[] {
  return findOverlays(k8sDir);
}

export async function kubernetesTarget(overlayDir: string): Promise<Target> {
  const shown = shownPath(overlayDir);
  const target = await buildTarget(`kubernetes ${shown}`, `${shown} (rendered by kubectl kustomize)`, kubernetesServices(overlayDir));
  return { ...target, hosts: kubernetesHosts(renderKustomization(overlayDir)) };
}

/** Each Service of the overlay by name: the service its selector picks (app.kubernetes.io/name) and whether it is headless. */
export function kubernetesHosts(objects: K8sObject[]): NonNullable<Target["hosts"]> {
  const hosts: NonNullable<Target["hosts"]> = {};
  for (const s of objects.filter((o) => o.kind === "Service")) {
    const spec = isRecord(s["spec"]) ? s["spec"] : {};
    const selector = isRecord(spec["selector"]) ? spec["selector"] : {};
    const service = selector["app.kubernetes.io/name"];
    if (typeof service === "string") hosts[s.metadata.name] = { service, headless: spec["clusterIP"] === "None" };
  }
  return hosts;
}
