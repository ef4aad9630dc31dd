/**
 * Renders a kustomization the way `kubectl kustomize` would, for the
 * features deploy/k8s uses and no others: `resources` (files and
 * directories), `namespace`, `images`, and inline JSON 6902 `patches` with
 * `add`/`replace` and a target of kind and optional exact name. Anything
 * else throws, so an overlay using a feature this does not model fails
 * loudly instead of being rendered wrongly; where kustomize is lenient (a
 * patch that matches nothing) this is stricter. kubectl is not part of a
 * fresh machine or CI (.ci/run installs Debian packages and npm only), and
 * no kustomize ships on npm. Used by the audit and by
 * test/kubernetes-manifests.test.ts.
 */
import { readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseAllDocuments } from "yaml";

export interface ObjectMeta {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  [key: string]: unknown;
}

/** A rendered Kubernetes object, plain JSON. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [key: string]: unknown;
}

const kustomizationFields = new Set(["apiVersion", "kind", "resources", "namespace", "images", "patches"]);
const clusterScopedKinds = new Set(["Namespace"]);

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function readYamlDocuments(file: string): unknown[] {
  const out: unknown[] = [];
  for (const doc of parseAllDocuments(readFileSync(file, "utf8"))) {
    if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors.map((e) => e.message).join("; ")}`);
    const value: unknown = doc.toJS();
    if (value !== null && value !== undefined) out.push(value);
  }
  return out;
}

function asObject(value: unknown, source: string): K8sObject {
  if (!isRecord(value) || typeof value["apiVersion"] !== "string" || typeof value["kind"] !== "string") {
    throw new Error(`${source}: not a Kubernetes object (apiVersion and kind are required)`);
  }
  const meta = value["metadata"];
  if (!isRecord(meta) || typeof meta["name"] !== "string") throw new Error(`${source}: metadata.name is required`);
  return value as K8sObject;
}

export function idOf(o: K8sObject): string {
  return `${o.kind}/${o.metadata.name}`;
}

function stringList(value: unknown, what: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((v) => typeof v === "string")) throw new Error(`${what} must be a list of strings`);
  return value as string[];
}

function onlyKeys(value: Record<string, unknown>, allowed: string[], what: string): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) throw new Error(`${what}: "${key}" is not supported by the test's kustomize loader (supported: ${allowed.join(", ")})`);
  }
}

/** Renders the kustomization in `dir` (see the header for what is supported). */
export function buildKustomization(dir: string): K8sObject[] {
  const file = join(dir, "kustomization.yaml");
  const [k, ...extra] = readYamlDocuments(file);
  if (!isRecord(k) || extra.length > 0) throw new Error(`${file}: expected one mapping`);
  onlyKeys(k, [...kustomizationFields], file);
  if (k["kind"] !== "Kustomization") throw new Error(`${file}: kind must be Kustomization`);

  const objects: K8sObject[] = [];
  for (const entry of stringList(k["resources"], `${file}: resources`)) {
    const path = resolve(dir, entry);
    if (statSync(path).isDirectory()) objects.push(...buildKustomization(path));
    else objects.push(...readYamlDocuments(path).map((d, i) => asObject(d, `${path} document ${i + 1}`)));
  }
  const seen = new Set<string>();
  for (const o of objects) {
    const key = `${o.apiVersion} ${idOf(o)} ${o.metadata.namespace ?? ""}`;
    if (seen.has(key)) throw new Error(`${file}: ${idOf(o)} is defined twice`);
    seen.add(key);
  }

  const patches = k["patches"] ?? [];
  if (!Array.isArray(patches)) throw new Error(`${file}: patches must be a list`);
  for (const p of patches) applyPatch(objects, p, file);

  const namespace = k["namespace"];
  if (namespace !== undefined) {
    if (typeof namespace !== "string") throw new Error(`${file}: namespace must be a string`);
    for (const o of objects) {
      if (!clusterScopedKinds.has(o.kind)) o.metadata.namespace = namespace;
      // kustomize's handling of Namespace objects is not modelled: name them like `namespace`.
      else if (o.kind === "Namespace" && o.metadata.name !== namespace) {
        throw new Error(`${file}: Namespace ${o.metadata.name} differs from namespace: ${namespace}`);
      }
    }
  }

  const images = k["images"] ?? [];
  if (!Array.isArray(images)) throw new Error(`${file}: images must be a list`);
  for (const rule of images) applyImageRule(objects, rule, file);
  return objects;
}

export function splitImage(image: string): { name: string; tag?: string; digest?: string } {
  const [withoutDigest = image, digest] = image.split("@", 2);
  const colon = withoutDigest.lastIndexOf(":");
  // A colon before the last slash belongs to a registry port, not a tag.
  if (colon > withoutDigest.lastIndexOf("/")) {
    return { name: withoutDigest.slice(0, colon), tag: withoutDigest.slice(colon + 1), ...(digest ? { digest } : {}) };
  }
  return { name: withoutDigest, ...(digest ? { digest } : {}) };
}

function podSpecsOf(o: K8sObject): Record<string, unknown>[] {
  const spec = o["spec"];
  if (!isRecord(spec)) return [];
  const template = spec["template"];
  const podSpec = isRecord(template) ? template["spec"] : undefined;
  return isRecord(podSpec) ? [podSpec] : [];
}

function applyImageRule(objects: K8sObject[], rule: unknown, file: string): void {
  if (!isRecord(rule) || typeof rule["name"] !== "string") throw new Error(`${file}: an images entry needs a name`);
  onlyKeys(rule, ["name", "newName", "newTag", "digest"], `${file}: images`);
  const { name, newName, newTag, digest } = rule;
  for (const podSpec of objects.flatMap(podSpecsOf)) {
    for (const list of [podSpec["containers"], podSpec["initContainers"]]) {
      if (!Array.isArray(list)) continue;
      for (const c of list) {
        if (!isRecord(c) || typeof c["image"] !== "string") continue;
        const image = splitImage(c["image"]);
        if (image.name !== name) continue;
        const repo = typeof newName === "string" ? newName : image.name;
        if (typeof digest === "string") c["image"] = `${repo}@${digest}`;
        else {
          const tag = newTag === undefined ? image.tag : String(newTag);
          c["image"] = tag === undefined ? repo : `${repo}:${tag}`;
        }
      }
    }
  }
}

function applyPatch(objects: K8sObject[], entry: unknown, file: string): void {
  if (!isRecord(entry)) throw new Error(`${file}: a patches entry must be a mapping`);
  onlyKeys(entry, ["target", "patch"], `${file}: patches`);
  const { target, patch } = entry;
  if (!isRecord(target) || typeof target["kind"] !== "string") throw new Error(`${file}: each patch needs a target with a kind`);
  onlyKeys(target, ["kind", "name"], `${file}: patch target`);
  if (typeof patch !== "string") throw new Error(`${file}: only inline JSON 6902 patches (patch: |- ...) are supported`);
  const ops = parseAllDocuments(patch);
  const [opsDoc] = ops;
  if (ops.length !== 1 || opsDoc === undefined || opsDoc.errors.length > 0) throw new Error(`${file}: a patch must be one YAML list`);
  const list: unknown = opsDoc.toJS();
  if (!Array.isArray(list)) throw new Error(`${file}: a JSON 6902 patch is a list of operations`);
  const matched = objects.filter((o) => o.kind === target["kind"] && (target["name"] === undefined || o.metadata.name === target["name"]));
  if (matched.length === 0) throw new Error(`${file}: patch target ${String(target["kind"])}/${String(target["name"] ?? "*")} matches nothing`);
  for (const o of matched) {
    for (const op of list) applyOperation(o, op, `${file}: patch on ${idOf(o)}`);
  }
}

function applyOperation(o: K8sObject, op: unknown, where: string): void {
  if (!isRecord(op) || typeof op["path"] !== "string" || (op["op"] !== "add" && op["op"] !== "replace")) {
    throw new Error(`${where}: only {op: add|replace, path, value} operations are supported`);
  }
  onlyKeys(op, ["op", "path", "value"], where);
  const tokens = op["path"]
    .split("/")
    .slice(1)
    .map((t) => t.replaceAll("~1", "/").replaceAll("~0", "~"));
  const last = tokens.pop();
  if (last === undefined) throw new Error(`${where}: empty path`);
  let parent: unknown = o;
  for (const t of tokens) {
    parent = Array.isArray(parent) ? parent[Number(t)] : isRecord(parent) ? parent[t] : undefined;
    if (parent === undefined) throw new Error(`${where}: ${op["path"]} does not exist`);
  }
  const value: unknown = structuredClone(op["value"]);
  if (Array.isArray(parent)) {
    const index = last === "-" ? parent.length : Number(last);
    if (!Number.isInteger(index) || index < 0 || index > parent.length) throw new Error(`${where}: bad index in ${op["path"]}`);
    if (op["op"] === "replace") {
      if (index >= parent.length) throw new Error(`${where}: ${op["path"]} does not exist`);
      parent[index] = value;
    } else parent.splice(index, 0, value);
  } else if (isRecord(parent)) {
    if (op["op"] === "replace" && !(last in parent)) throw new Error(`${where}: ${op["path"]} does not exist (use add)`);
    parent[last] = value;
  } else throw new Error(`${where}: ${op["path"]} does not exist`);
}
