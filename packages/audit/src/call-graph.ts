import type { DependencyDescription, ServiceDescription, Target, TargetService } from "./model.js";
import { describeService } from "./describe-service.js";

export interface Hop {
  caller: ServiceDescription;
  dependency: DependencyDescription;
  /** Undefined when the URL reaches no service of this target. */
  callee: ServiceDescription | undefined;
}

export interface CallGraph {
  services: ServiceDescription[];
  /** The target's services by name, with where their variables are set. */
  sources: Map<string, TargetService>;
  hops: Hop[];
  edges: ServiceDescription[];
  /** The target's Kubernetes Services by name (Target.hosts), when it has them. */
  hosts: Target["hosts"];
}

const anyHost = new Set(["127.0.0.1", "localhost", "0.0.0.0", "::1", "[::1]"]);

/**
 * The call graph from the services' own configuration: each dependency's
 * URL names the service it reaches, by host (compose service; Kubernetes
 * Service, by the service its selector picks) or, on one machine, by port. No list of edges is kept anywhere else.
 */
export function buildCallGraph(target: Target): CallGraph {
  const described = target.services.map((s) => describeService(s.name, s.config, s.wired, s.plugins));
  const resolve = (url: string): ServiceDescription | undefined => {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      return undefined;
    }
    const port = Number(u.port || (u.protocol === "https:" ? 443 : 80));
    const name = target.hosts?.[u.hostname]?.service ?? u.hostname;
    return described.find((s) => s.name === name) ?? (anyHost.has(u.hostname) ? described.find((s) => s.port === port) : undefined);
  };
  const services = outsideIn(described, resolve);
  const hops = services.flatMap((caller) => caller.dependencies.map((dependency) => ({ caller, dependency, callee: resolve(dependency.baseUrl) })));
  return { services, sources: new Map(target.services.map((s) => [s.name, s])), hops, edges: services.filter((s) => s.edge), hosts: target.hosts };
}

/** Edges first, then every service after those that call it: the report reads from the outside in. */
function outsideIn(services: ServiceDescription[], resolve: (url: string) => ServiceDescription | undefined): ServiceDescription[] {
  const depth = new Map<string, number>();
  const visit = (s: ServiceDescription, d: number, seen: string[]) => {
    if ((depth.get(s.name) ?? -1) >= d || seen.includes(s.name)) return;
    depth.set(s.name, d);
    for (const dep of s.dependencies) {
      const callee = resolve(dep.baseUrl);
      if (callee) visit(callee, d + 1, [...seen, s.name]);
    }
  };
  for (const e of services.filter((s) => s.edge)) visit(e, 0, []);
  return [...services].sort((a, b) => (depth.get(a.name) ?? Infinity) - (depth.get(b.name) ?? Infinity) || a.name.localeCompare(b.name));
}

/** A path from an edge's dependency down to a database or a service that calls nothing. */
export interface Path {
  hops: Hop[];
  /** The service at the end: its database is the last hop when it has one. */
  end: ServiceDescription;
}

/** Every path below `from` (cycles cut). */
export function pathsBelow(graph: CallGraph, from: ServiceDescription, seen: string[] = []): Path[] {
  const out: Path[] = [];
  const below = graph.hops.filter((h) => h.caller === from && h.callee !== undefined && !seen.includes(h.callee.name));
  if (from.database !== undefined || below.length === 0) out.push({ hops: [], end: from });
  for (const h of below) {
    for (const p of pathsBelow(graph, h.callee!, [...seen, from.name])) out.push({ hops: [h, ...p.hops], end: p.end });
  }
  return out;
}
