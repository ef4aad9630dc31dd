import type { LoadedManifest } from "../manifest.js";
import { generatedNotice } from "./header.js";

/**
 * packages/launcher/src/service-names.generated.ts: the names, for types
 * only (`platform.services.gateway` without a check). What the launcher
 * starts comes from the manifests at run time, not from this list.
 */
export function launcherServiceNames(manifests: readonly LoadedManifest[]): string {
  return [
    `// ${generatedNotice}.`,
    "// In dependency order (callees first). Types only: the launcher starts what",
    "// the manifests say at run time.",
    `export const serviceNames = [${manifests.map((m) => JSON.stringify(m.name)).join(", ")}] as const;`,
    "export type ServiceName = (typeof serviceNames)[number];",
    "",
  ].join("\n");
}
