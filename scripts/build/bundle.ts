import { existsSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { isBuiltin } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { sha256, writeAtomically } from "./files.js";
import type { Workspace } from "./workspaces.js";

/**
 * Packages a service bundle leaves to node_modules: pg-native, pg's optional
 * native binding, required only when asked for, and not installed.
 */
export const leftOutOfBundles = ["pg-native"];

/**
 * Entries of the platform's packages that a plug-in imports and the
 * services do not: the runtime's hooks for the lab (the naive baseline
 * builds its request scope with them, lab/naive/naive-server.ts). Each
 * bundle holds and shares them too, so that such a plug-in reaches the
 * bundle's instances and not a second copy from dist/.
 */
const sharedForPlugins = ["@platform/runtime/testing"];

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
 * to get ready (docs/deployment.md, "Each service is one file").
 *
 * Two passes. The first records each package the platform's own code
 * imports (not the imports between third-party packages), with the file it
 * resolves to. The second bundles an entry that first hands those modules'
 * namespaces to @platform/runtime's `shareBundledModules` and then runs
 * src/main.ts: a plug-in loaded at start (PLATFORM_PLUGINS) imports them by
 * the same names and gets these instances, not second copies from
 * node_modules (packages/runtime/src/config/bundled-modules.ts).
 *
 * Made from the TypeScript sources, the platform's packages included
 * (tsconfig.json's `paths`), by esbuild: the same transform tsx applies when
 * the tests and the lab run the sources. The bundle keeps import.meta.url
 * at dist/main.js, where the compiled main.js was, so paths the service
 * computes from it (`../migrations`) are unchanged.
 */
export async function bundleService(root: string, w: Workspace): Promise<{ written: boolean }> {
  const dir = join(root, w.dir);
  const outfile = join(dir, "dist/main.js");
  const stamp = BundleStamp.forService(root, w.dir);
  if (stamp.isCurrent(outfile)) return { written: false };
  const common: esbuild.BuildOptions = {
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node22",
    tsconfig: join(root, "tsconfig.json"),
    external: leftOutOfBundles,
    logLevel: "silent",
    // CommonJS packages in an ES module bundle still call require() (node's
    // own modules among them): give the bundle a real one.
    banner: { js: 'import { createRequire as __bundleRequire } from "node:module"; const require = __bundleRequire(import.meta.url);' },
  };

  const platformImports = new Map<string, string>();
  await esbuild.build({
    ...common,
    stdin: {
      contents: ["./src/main.ts", ...sharedForPlugins].map((s) => `import ${JSON.stringify(s)};`).join("\n"),
      resolveDir: dir,
      sourcefile: "record-entry.js",
      loader: "js",
    },
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
  const result = await esbuild.build({
    ...common,
    stdin: { contents: `import ${JSON.stringify(shareModule)};\nimport "./src/main.ts";\n`, resolveDir: dir, sourcefile: "bundle-entry.js", loader: "js" },
    outfile,
    // Written below with writeAtomically: a service starting during a
    // build never reads half a bundle.
    write: false,
    metafile: true,
    // A stack trace names dist/main.js and a line of one large file; the map
    // (no sources inside: they are in the repository) turns that back into
    // the source file and line for whoever runs with
    // NODE_OPTIONS=--enable-source-maps. Off by default: with it, every
    // stack a log line prints is mapped, at a cost paid most when many
    // requests fail at once.
    sourcemap: "linked",
    sourcesContent: false,
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
  mkdirSync(dirname(outfile), { recursive: true });
  for (const f of result.outputFiles) {
    writeAtomically(f.path, f.contents);
  }
  stamp.record(
    Object.keys(result.metafile.inputs)
      .filter((f) => !f.startsWith("platform-bundle:") && f !== "bundle-entry.js")
      .map((f) => resolve(f)),
    sha256(result.outputFiles.find((f) => f.path === outfile)?.contents ?? ""),
  );
  return { written: true };
}

/**
 * What a service's bundle was made from: each input file's size and
 * modification time (with the lock file, tsconfig.json and this file),
 * esbuild's version, and the bundle's hash. When all still hold, the bundle is current and is not made again
 * (`npm start` and the tests build often, and bundling eight services costs
 * about 5 CPU s). Kept beside the transpile cache, outside the repository.
 */
class BundleStamp {
  private constructor(
    private readonly file: string,
    private readonly root: string,
  ) {}

  static forService(root: string, dir: string): BundleStamp {
    return new BundleStamp(join(tmpdir(), `platform-bundle-${sha256(join(root, dir)).slice(0, 16)}.json`), root);
  }

  isCurrent(outfile: string): boolean {
    let saved: { esbuild: string; output: string; inputs: Record<string, string> };
    try {
      saved = JSON.parse(readFileSync(this.file, "utf8")) as typeof saved;
      if (saved.esbuild !== esbuild.version || !existsSync(outfile) || sha256(readFileSync(outfile)) !== saved.output) return false;
    } catch {
      return false;
    }
    return Object.entries(saved.inputs).every(([f, seen]) => fileState(f) === seen);
  }

  record(inputs: string[], outputHash: string): void {
    // Also what decides how inputs resolve and are bundled: the lock file, tsconfig.json (paths), this file (the options).
    const files = [...inputs, join(this.root, "package-lock.json"), join(this.root, "tsconfig.json"), fileURLToPath(import.meta.url)];
    const state = { esbuild: esbuild.version, output: outputHash, inputs: Object.fromEntries(files.map((f) => [f, fileState(f)])) };
    writeAtomically(this.file, JSON.stringify(state));
  }
}

function fileState(file: string): string {
  try {
    const s = statSync(file);
    return `${s.size}:${s.mtimeMs}`;
  } catch {
    return "missing";
  }
}

/** "@scope/name/sub" -> "@scope/name"; "name/sub" -> "name". */
function packageOf(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
}
