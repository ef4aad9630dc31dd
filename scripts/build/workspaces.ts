import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

export interface Workspace {
  /** Folder relative to the repository root, e.g. `packages/runtime`. */
  dir: string;
  manifest: WorkspaceManifest;
}

export interface WorkspaceManifest {
  name?: string;
  /** Not private: a library published to the registry (packages/client), not part of the services' runtime. */
  private?: boolean;
  exports?: unknown;
  files?: unknown;
  scripts?: Record<string, string>;
}

/**
 * Every workspace the root package.json declares, so that a package or
 * service added later (by hand or by `npm run new-service`) is built and
 * shipped without a list to update. Only the `<folder>/*` form the root
 * uses is understood; anything else is refused rather than half-read.
 */
export function listWorkspaces(root: string): Workspace[] {
  const rootManifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { workspaces?: unknown };
  const patterns = rootManifest.workspaces;
  if (!Array.isArray(patterns) || !patterns.every((p): p is string => typeof p === "string")) {
    throw new Error(`${join(root, "package.json")}: "workspaces" must be a list of folder patterns`);
  }
  const out: Workspace[] = [];
  for (const pattern of patterns) {
    const m = /^([\w.-]+)\/\*$/.exec(pattern);
    if (!m) throw new Error(`workspace pattern ${JSON.stringify(pattern)}: only "<folder>/*" is supported by scripts/build`);
    const parent = m[1]!;
    if (!existsSync(join(root, parent))) continue;
    for (const name of readdirSync(join(root, parent)).sort()) {
      const dir = `${parent}/${name}`;
      const file = join(root, dir, "package.json");
      if (!existsSync(file)) continue;
      out.push({ dir, manifest: JSON.parse(readFileSync(file, "utf8")) as WorkspaceManifest });
    }
  }
  return out;
}
