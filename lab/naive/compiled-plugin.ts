import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { stripTypeScriptTypes } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const sourceDir = fileURLToPath(new URL(".", import.meta.url));
/** Inside the repository (gitignored): the plug-in's bare imports (@platform/*) resolve to the same node_modules, so to the same compiled workspaces the services load. */
const outDir = join(sourceDir, "dist");

/**
 * The naive plug-in for services that run from their build (`from: "build"`):
 * plain node loads JavaScript, and a TypeScript plug-in through tsx would
 * bring tsx's path mapping into the service (two copies of @platform/runtime,
 * the plug-in registering into the wrong one). Its modules use erasable
 * syntax only, so stripping their types is the whole compilation; their
 * relative imports already name the `.js` files written here. Written on
 * every call (a few kilobytes; the sources may have changed), each file by
 * rename so that a service starting meanwhile never reads half a file.
 * Returns the plug-in's path, for PLATFORM_PLUGINS.
 */
export function compiledNaivePlugin(): string {
  mkdirSync(outDir, { recursive: true });
  for (const name of readdirSync(sourceDir)) {
    if (!name.endsWith(".ts") || name.endsWith(".spec.ts") || name === "compiled-plugin.ts") continue;
    const js = stripTypeScriptTypes(readFileSync(join(sourceDir, name), "utf8"));
    const target = join(outDir, name.replace(/\.ts$/, ".js"));
    const temp = `${target}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    writeFileSync(temp, js);
    renameSync(temp, target);
  }
  return join(outDir, "plugin.js");
}
