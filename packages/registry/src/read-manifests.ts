import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { dependencyOrder, registryProblems } from "./check-registry.js";
import { effectiveDependencies } from "./graph.js";
import type { LoadedManifest } from "./manifest.js";
import { parseManifest } from "./parse-manifest.js";
import { protoApis } from "./proto-apis.js";

/** The repository root (this file is packages/registry/{src,dist}/). */
export const repositoryRoot = fileURLToPath(new URL("../../../", import.meta.url));

export class ManifestError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid service manifests:\n  - ${problems.join("\n  - ")}`);
    this.name = "ManifestError";
  }
}

/**
 * Every services/<name>/service.json, validated one by one and against each
 * other, in dependency order (callees first). A folder without service.json
 * is not a service (a library, or one being written). Any problem throws
 * one ManifestError listing all of them, each naming its file and key.
 */
export function readServiceManifests(root: string = repositoryRoot): LoadedManifest[] {
  const servicesDir = join(root, "services");
  const problems: string[] = [];
  const manifests: LoadedManifest[] = [];
  const folders = existsSync(servicesDir)
    ? readdirSync(servicesDir, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name)
        .sort()
    : [];
  for (const folder of folders) {
    const path = join(servicesDir, folder, "service.json");
    if (!existsSync(path)) continue;
    const file = relative(root, path);
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(path, "utf8"));
    } catch (e) {
      problems.push(`${file}: not valid JSON (${e instanceof Error ? e.message : String(e)})`);
      continue;
    }
    const parsed = parseManifest(raw, folder);
    problems.push(...parsed.problems.map((p) => `${file}: ${p}`));
    if (parsed.manifest) manifests.push({ ...parsed.manifest, file });
  }
  if (problems.length === 0) problems.push(...registryProblems(manifests, protoApis(join(root, "proto"))));
  if (problems.length > 0) throw new ManifestError(problems);
  // The edge after every public service too, which it calls whether listed or not.
  return dependencyOrder(manifests, (m) => effectiveDependencies(m, manifests));
}
