import * as nodeModule from "node:module";

/**
 * A bundled service (`npm run build` writes each service's dist/main.js as
 * one file, scripts/build/bundle.ts) holds its own copy of every package it
 * imports. A plug-in (PLATFORM_PLUGINS, plugin.ts) is loaded from outside
 * the bundle: its `import "@platform/runtime"` would load a second copy from
 * node_modules, with module state of its own (the installed database
 * factory, the request scope's AsyncLocalStorage, context keys, the
 * prom-client registry), and what it installs there the service never
 * reads. So the bundle's entry hands its modules' namespaces to
 * `shareBundledModules()` before the service starts, under the specifiers
 * the bundle imported them by, and before any plug-in is imported
 * `sharePluginImports()` resolves those specifiers, for every import from
 * then on, to the bundle's own instances (module resolution hooks,
 * `module.registerHooks`). A specifier the bundle does not contain loads as
 * usual.
 */
const sharedKey = Symbol.for("@platform/runtime.bundled-modules");
const scheme = "platform-bundled:";

type Namespaces = Map<string, Record<string, unknown>>;

function shared(): Namespaces | undefined {
  return (globalThis as { [sharedKey]?: Namespaces })[sharedKey];
}

/** Called by a bundle's entry, before the service's code runs: the bundle's modules, by the specifier it imported each by. */
export function shareBundledModules(modules: Record<string, Record<string, unknown>>): void {
  (globalThis as { [sharedKey]?: Namespaces })[sharedKey] = new Map(Object.entries(modules));
}

/** The specifiers a plug-in's imports resolve to the bundle's modules by; empty when the service is not bundled. */
export function bundledSpecifiers(): string[] {
  return [...(shared()?.keys() ?? [])];
}

let hooked = false;

/**
 * When the service runs from a bundle, makes every import from now on of a
 * specifier the bundle contains resolve to the bundle's own module. Does
 * nothing for a service that is not bundled (its packages are single
 * instances already). Throws where node has no synchronous resolution hooks
 * (before 22.15): a plug-in would silently install into a copy.
 */
export function sharePluginImports(): void {
  const modules = shared();
  if (hooked || modules === undefined || modules.size === 0) return;
  const registerHooks = (nodeModule as { registerHooks?: (hooks: object) => unknown }).registerHooks;
  if (typeof registerHooks !== "function") {
    throw new Error(`plug-ins in a bundled service need node's module.registerHooks (node 22.15 or later); this is node ${process.versions.node}`);
  }
  hooked = true;
  registerHooks({
    resolve(specifier: string, context: unknown, next: (s: string, c: unknown) => unknown) {
      return modules.has(specifier) ? { url: scheme + specifier, shortCircuit: true } : next(specifier, context);
    },
    load(url: string, context: unknown, next: (u: string, c: unknown) => unknown) {
      if (!url.startsWith(scheme)) return next(url, context);
      const specifier = url.slice(scheme.length);
      return { format: "module", source: reexportSource(specifier, modules.get(specifier) ?? {}), shortCircuit: true };
    },
  });
}

/** An ES module that re-exports one shared namespace: its named exports (identifiers only) and its default. */
export function reexportSource(specifier: string, namespace: Record<string, unknown>): string {
  const lines = [`const ns = globalThis[Symbol.for(${JSON.stringify(sharedKey.description)})].get(${JSON.stringify(specifier)});`];
  for (const name of Object.keys(namespace)) {
    if (name === "default") lines.push("export default ns.default;");
    else if (/^[A-Za-z_$][\w$]*$/.test(name)) lines.push(`export const ${name} = ns[${JSON.stringify(name)}];`);
  }
  return lines.join("\n");
}
