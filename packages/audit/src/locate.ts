import type { CallGraph } from "./call-graph.js";

/** The prefix of a dependency's variables, as readDependencyConfig builds it ("stock-level" -> STOCK_LEVEL). */
export function variablePrefix(dependency: string): string {
  return dependency.toUpperCase().replace(/[^A-Z0-9]/g, "_");
}

/**
 * Where to change `variable` for `service`: where it is set, with its value,
 * or that it is unset and its default comes from the service's config.ts;
 * for a running service, its operator port.
 */
export function locate(graph: CallGraph, service: string, variable: string): string {
  const src = graph.sources.get(service);
  if (src?.adminUrl !== undefined) return `${variable} of ${service} (live, ${src.adminUrl}/admin/config)`;
  const set = src?.env[variable];
  if (set !== undefined) return `${variable}=${set.value} (${set.source})`;
  return `${variable} of ${service}, unset: the default in ${src?.defaultsFile ?? `services/${service}/src/config.ts`}`;
}
