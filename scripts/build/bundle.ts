import { isBuiltin } from "node:module";
import { join, relative } from "node:path";
import * as esbuild from "esbuild";
import type { Workspace } from "./workspaces.js";

/**
 * Packages a service bundle leaves to node_modules:
 * - graphile-worker: receipts checks at start that its installed files carry
 *   our patch (services/receipts/src/graphile-patch.ts reads them where
 *   node resolves the package);
 * - pg-native: pg's optional native binding, required only when asked for,
 *   and not installed.
 */
export const leftOutOfBundles = ["graphile-worker", "pg-native"];

/** The service whose folder holds src/main.ts is bundled (bundleService); libraries are not. */
export function isBundledService(w: Workspace): boolean {
  return w.dir.startsWith("services/");
}

/** The name of the share module in a bundle's entry (bundleService). */
const shareModule = "platform-bundle:share";

/**
 * Writes a service's dist/main.js as one ES module holding the service and
 * every package it imports, except `leftOutOfBundles`. A service started
 * from it loads one file instead of about 500 modules: about half the CPU
 * to get ready (docs/performance.md, "Start-up").
 *
 * Two passes. The first records each package the platform's own code
 * imports (not the imports between third-party packages), with the file it
 * resolves to. The second bundles an entry that first hands those modules'
 * namespaces to @platform/runtime's `shareBundledModules` and then runs
 * src/main.ts: a plug-in loaded at start (PLATFORM_PLUGINS) imports them by
 * the same names and gets these instances, not second copies from
 * node_modules (packages/runtime/src/bundled-modules.ts).
 *
 * The bundle keeps import.meta.url at dist/main.js, where the compiled
 * main.js was, so paths the service computes from it (`../migrations`)
 * are unchanged.
 */
export async function bundleService(root: string, w: Workspace): Promise<{ bytes: number; shared: number }> {
  const dir = join(root, w.dir);
  const common: esbuild.BuildOptions = {
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node22",
    external: leftOutOfBundles,
    logLevel: "silent",
    // CommonJS packages in an ES module bundle still call require() (node's
    // own modules among them): give the bundle a real one.
    banner: { js: 'import { createRequire as __bundleRequire } from "node:module"; const require = __bundleRequire(import.meta.url);' },
  };

  const platformImports = new Map<string, string>();
  await esbuild.build({
    ...common,
    entryPoints: [join(dir, "src/main.ts")],
    write: false,
    plugins: [
      {
        name: "record-platform-imports",
        setup(build) {
          build.onResolve({ filter: /^[^./]/ }, async (args) => {
            if (args.pluginData === "recording" || isBuiltin(args.path) || leftOutOfBundles.includes(packageOf(args.path))) return undefined;
            if (args.importer.includes("/node_modules/") || platformImports.has(args.path)) return undefined;
            const r = await build.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, pluginData: "recording" });
            if (r.errors.length === 0 && !r.external) platformImports.set(args.path, r.path);
            return undefined;
          });
        },
      },
    ],
  });

  const specifiers = [...platformImports.keys()].sort();
  const share = [
    'import { shareBundledModules } from "@platform/runtime";',
    ...specifiers.map((s, i) => `import * as m${i} from ${JSON.stringify(platformImports.get(s))};`),
    `shareBundledModules({ ${specifiers.map((s, i) => `${JSON.stringify(s)}: m${i}`).join(", ")} });`,
  ].join("\n");
  const outfile = join(dir, "dist/main.js");
  const result = await esbuild.build({
    ...common,
    stdin: { contents: `import ${JSON.stringify(shareModule)};\nimport "./src/main.ts";\n`, resolveDir: dir, sourcefile: "bundle-entry.js", loader: "js" },
    outfile,
    metafile: true,
    plugins: [
      {
        name: "share-module",
        setup(build) {
          build.onResolve({ filter: /^platform-bundle:share$/ }, () => ({ path: "share", namespace: "platform-bundle" }));
          build.onLoad({ filter: /.*/, namespace: "platform-bundle" }, () => ({ contents: share, resolveDir: dir, loader: "js" }));
        },
      },
    ],
  });
  const bytes = result.metafile.outputs[relative(process.cwd(), outfile)]?.bytes ?? Object.values(result.metafile.outputs)[0]?.bytes ?? 0;
  return { bytes, shared: specifiers.length };
}

/** "@scope/name/sub" -> "@scope/name"; "name/sub" -> "name". */
function packageOf(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
}
