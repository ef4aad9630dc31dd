/**
 * Renders kustomizations with real kustomize (`kubectl kustomize DIR`), and
 * finds the ones to render. Used by the manifest test and by the audit.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parseAllDocuments } from "yaml";
import { kubectlPath } from "./kubectl.js";
import { asObject, isRecord, type K8sObject } from "./objects.js";

export { kubectlPath, pinnedKubectlPath, pinnedKubectlVersion } from "./kubectl.js";
export { idOf, isRecord, splitImage, type K8sObject, type ObjectMeta } from "./objects.js";

/** Parses a multi-document YAML stream into objects; `source` names it in errors. */
export function parseObjects(yamlText: string, source: string): K8sObject[] {
  const out: K8sObject[] = [];
  parseAllDocuments(yamlText).forEach((doc, i) => {
    if (doc.errors.length > 0) throw new Error(`${source} document ${i + 1}: ${doc.errors.map((e) => e.message).join("; ")}`);
    const value: unknown = doc.toJS();
    if (value !== null && value !== undefined) out.push(asObject(value, `${source} document ${i + 1}`));
  });
  return out;
}

/** The objects `kubectl apply -k dir` would apply, in kustomize's order. */
export function renderKustomization(dir: string, kubectl = kubectlPath()): K8sObject[] {
  let text: string;
  try {
    text = execFileSync(kubectl, ["kustomize", dir], { encoding: "utf8", maxBuffer: 64 * 1024 * 1024, stdio: ["ignore", "pipe", "pipe"] });
  } catch (e) {
    const stderr = isRecord(e) && typeof e["stderr"] === "string" ? e["stderr"].trim() : "";
    throw new Error(`kubectl kustomize ${dir} failed: ${stderr || (e instanceof Error ? e.message : String(e))}`);
  }
  return parseObjects(text, `kubectl kustomize ${dir}`);
}

const kustomizationNames = ["kustomization.yaml", "kustomization.yml", "Kustomization"];

function kustomizationFile(dir: string): string | undefined {
  const names = new Set(readdirSync(dir));
  const name = kustomizationNames.find((n) => names.has(n));
  return name === undefined ? undefined : join(dir, name);
}

/**
 * Every kustomization under `root` that nothing else includes: the overlays
 * one applies. Bases (included by an overlay's `resources`) and components
 * (kind: Component, not renderable alone) are left out. Sorted.
 */
export function findOverlays(root: string): string[] {
  const dirs = readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && kustomizationNames.includes(e.name))
    .map((e) => resolve(e.parentPath));
  const included = new Set<string>();
  const roots: string[] = [];
  for (const dir of new Set(dirs)) {
    const file = kustomizationFile(dir);
    if (file === undefined) continue;
    const k: unknown = parseAllDocuments(readFileSync(file, "utf8"))[0]?.toJS();
    if (!isRecord(k)) throw new Error(`${file}: not a mapping`);
    for (const field of ["resources", "components"]) {
      const list = k[field];
      if (Array.isArray(list)) for (const entry of list) if (typeof entry === "string") included.add(resolve(dirname(file), entry));
    }
    if (k["kind"] !== "Component") roots.push(dir);
  }
  return roots.filter((d) => !included.has(d)).sort();
}
