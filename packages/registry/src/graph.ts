import { defaultBulkhead, type DependencyManifest, type LoadedManifest } from "./manifest.js";

/**
 * What a service calls: its listed dependencies and, for the edge, every
 * public service (the gateway publishes their apis whether or not its
 * manifest lists them, with the default bulkhead when it does not).
 */
export function effectiveDependencies(m: LoadedManifest, all: readonly LoadedManifest[]): DependencyManifest[] {
  if (!m.edge) return m.dependencies;
  const implied = all.filter((x) => x.public && !m.dependencies.some((d) => d.service === x.name)).map((x) => ({ service: x.name, ...defaultBulkhead }));
  return [...m.dependencies, ...implied];
}

/** Who calls `name`, by name, from the edge inwards. */
export function callersOf(name: string, all: readonly LoadedManifest[]): string[] {
  return all
    .toReversed()
    .filter((m) => effectiveDependencies(m, all).some((d) => d.service === name))
    .map((m) => m.name);
}

/**
 * How many services the longest chain of calls starting at `name` crosses,
 * `name` included: 1 for a service that calls nobody. The edge's retry
 * layer leaves every attempt a hop reserve per service crossed
 * (dependency-client.ts `callDepth`).
 */
export function callDepth(name: string, all: readonly LoadedManifest[], seen: readonly string[] = []): number {
  const m = all.find((x) => x.name === name);
  if (!m) throw new Error(`${name}: no such service`);
  if (seen.includes(name)) throw new Error(`call cycle: ${[...seen, name].join(" -> ")}`);
  const below = effectiveDependencies(m, all).map((d) => callDepth(d.service, all, [...seen, name]));
  return 1 + Math.max(0, ...below);
}

/** The secret holding a database role's password (compose). */
export function passwordSecret(role: string): string {
  return `${role}_db_password`;
}

/**
 * The apis the edge forwards unchanged: those of public services that the
 * edge does not serve itself (checkout.v1.CheckoutService has its own
 * handler in the gateway).
 */
export function forwardedApis(all: readonly LoadedManifest[]): { api: string; service: LoadedManifest }[] {
  const edge = all.find((m) => m.edge);
  return all.filter((m) => m.public && !m.edge).flatMap((m) => m.apis.filter((api) => !edge?.apis.includes(api)).map((api) => ({ api, service: m })));
}
