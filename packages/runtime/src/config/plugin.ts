import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { Interceptor } from "@connectrpc/connect";
import { sharePluginImports } from "./bundled-modules.js";
import type { DependencyConfig, KeepaliveConfig } from "../client/dependency-config.js";
import type { Logger } from "../observability/logger.js";
import type { ServerInterceptors } from "../server/server-interceptors.js";
import type { ServerConfig } from "./server-config.js";

/** How serve() puts a server together; a plug-in receives it and returns its own. */
export interface ServerComposition {
  /** The interceptors around every handler, by role (server-interceptors.ts). */
  interceptors: ServerInterceptors;
  /** Admission control before the body is read (admission-gate.ts). Off: every request is admitted at once and nothing bounds the queue. */
  admission: boolean;
  /** The edge's intake controller, when the service configures one (intake.ts). */
  intake: boolean;
}

/** How createDependencyClient() puts a client together. */
export interface ClientComposition {
  /** Outermost first: retry (the edge only), budget gate, isolation, deadline propagation. */
  interceptors: Interceptor[];
  /** HTTP/2 PING on the dependency's connections; undefined: none. */
  keepalive: KeepaliveConfig | undefined;
}

/**
 * What a plug-in changes that the resilience audit must know (docs/audit.md),
 * for the service named. Anything left out is as the platform composes it.
 */
export interface PluginEffects {
  /** Every call to a dependency is attempted up to this many times by the plug-in's own loop (not the platform's: no budget, no pushback, no idempotency check). */
  callAttempts?: number;
  /** Each call gets this fixed timeout instead of the caller's remaining deadline. */
  fixedCallTimeoutMs?: number;
  /** Admission control is off: the server queues without bound. */
  noAdmission?: boolean;
  /** No bulkhead and no circuit breaker on any dependency. */
  noIsolation?: boolean;
  /** The edge's intake controller does not run. */
  noIntake?: boolean;
  /** Each database transaction is attempted this many times, without a statement_timeout. */
  databaseAttempts?: number;
}

/**
 * A change to how the platform composes a service, applied without touching
 * the service's code: serve() and createDependencyClient() hand it their
 * composition and run what it returns; `setup` may install what the
 * runtime does not compose (a database factory: @platform/database's
 * `useDatabaseFactory`). The storm lab's baseline is one (lab/); so could be
 * a service's own extra interceptors.
 */
export interface PlatformPlugin {
  readonly name: string;
  /** Called once when the plug-in is installed, before the service composes itself. */
  setup?(): void;
  server?(composition: ServerComposition, env: { config: ServerConfig; logger: Logger; shutdownSignal: AbortSignal }): ServerComposition;
  dependencyClient?(composition: ClientComposition, env: { dependency: DependencyConfig; server: ServerConfig }): ClientComposition;
  /** For the audit: what it changes in the service named. */
  effects?(service: string): PluginEffects;
}

const installed: PlatformPlugin[] = [];

/** Installs a plug-in for every server and dependency client made in this process from now on. */
export function usePlugin(plugin: PlatformPlugin): void {
  installed.push(plugin);
  plugin.setup?.();
}

/** The plug-ins installed in this process, with what each changes in `service` (GET /admin/config, the audit). */
export function installedPluginEffects(service: string): { name: string; effects: PluginEffects }[] {
  return installed.map((p) => ({ name: p.name, effects: p.effects?.(service) ?? {} }));
}

/** The plug-ins installed in this process, in order, then the ones given explicitly. */
export function pluginsWith(explicit: readonly PlatformPlugin[] | undefined): PlatformPlugin[] {
  return [...installed, ...(explicit ?? [])];
}

/** The environment variable naming plug-in modules to load at start (comma-separated module specifiers). */
export const pluginsVariable = "PLATFORM_PLUGINS";

/**
 * Loads the plug-in modules named in PLATFORM_PLUGINS: each must export a
 * `plugin` (a PlatformPlugin), which is installed. runMain() calls it
 * before the service starts.
 */
export async function loadPlugins(env: Record<string, string | undefined> = process.env): Promise<PlatformPlugin[]> {
  const specifiers = pluginSpecifiers(env);
  // In a bundled service, the plug-ins' imports of the packages the bundle
  // contains must reach the bundle's own instances (bundled-modules.ts).
  if (specifiers.length > 0) sharePluginImports();
  const loaded: PlatformPlugin[] = [];
  for (const specifier of specifiers) {
    const plugin = await importPlugin(specifier);
    usePlugin(plugin);
    loaded.push(plugin);
  }
  return loaded;
}

/** The module specifiers in PLATFORM_PLUGINS. */
export function pluginSpecifiers(env: Record<string, string | undefined>): string[] {
  return (env[pluginsVariable] ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

/**
 * Imports one plug-in module (a file, absolute or relative to `base`, or a
 * package name) and returns its `plugin` export, without installing it.
 */
export async function importPlugin(specifier: string, base: string = process.cwd()): Promise<PlatformPlugin> {
  const isPath = isAbsolute(specifier) || specifier.startsWith(".") || /\.(m?js|ts)$/.test(specifier);
  const url = isPath ? pathToFileURL(resolve(base, specifier)).href : specifier;
  const mod = (await import(url)) as { plugin?: PlatformPlugin };
  if (typeof mod.plugin?.name !== "string") throw new Error(`${pluginsVariable}: ${specifier} exports no plugin (a PlatformPlugin named "plugin")`);
  return mod.plugin;
}
