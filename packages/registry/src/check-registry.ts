import type { LoadedManifest } from "./manifest.js";

/**
 * What is wrong across the manifests, each problem naming the file and the
 * key: a dependency on a service that has no manifest, a cycle, two
 * services on one port, an api that proto/ does not declare or two services
 * serving it, not exactly one edge, a database role or schema taken twice.
 */
export function registryProblems(manifests: readonly LoadedManifest[], protoApis: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  const byName = new Map(manifests.map((m) => [m.name, m]));

  for (const m of manifests) {
    m.dependencies.forEach((d, i) => {
      if (d.service === m.name) problems.push(`${m.file}: dependencies[${i}].service: a service cannot call itself`);
      else if (!byName.has(d.service))
        problems.push(`${m.file}: dependencies[${i}].service: no service "${d.service}" (known: ${[...byName.keys()].sort().join(", ")})`);
      if (m.dependencies.findIndex((e) => e.service === d.service) !== i)
        problems.push(`${m.file}: dependencies[${i}].service: "${d.service}" is listed twice`);
    });
    m.apis.forEach((api, i) => {
      if (!protoApis.has(api))
        problems.push(`${m.file}: apis[${i}]: "${api}" is not a service declared in proto/ (declared: ${[...protoApis].sort().join(", ")})`);
    });
  }

  const ports = new Map<number, string>();
  for (const m of manifests) {
    for (const key of ["rpc", "admin"] as const) {
      const p = m.ports[key];
      const taken = ports.get(p);
      if (taken !== undefined) problems.push(`${m.file}: ports.${key}: ${p} is also ${taken}`);
      else ports.set(p, `${m.name}'s ports.${key}`);
    }
  }

  const servedBy = new Map<string, string>();
  for (const m of manifests.filter((x) => !x.edge)) {
    for (const api of m.apis) {
      const other = servedBy.get(api);
      if (other !== undefined) problems.push(`${m.file}: apis: "${api}" is also served by ${other}`);
      else servedBy.set(api, m.name);
    }
  }

  const edges = manifests.filter((m) => m.edge);
  // What runs only under npm start (the examples) cannot be needed by what is deployed.
  for (const m of manifests) {
    if (m.deploy) continue;
    if (m.edge || m.public) problems.push(`${m.file}: deploy: ${m.edge ? "the edge" : "a public service"} must be deployed; remove "deploy": false`);
    for (const caller of manifests) {
      if (caller.deploy && caller.dependencies.some((d) => d.service === m.name))
        problems.push(`${caller.file}: dependencies: calls ${m.name}, which is not deployed ("deploy": false)`);
    }
  }
  if (manifests.length > 0 && edges.length !== 1)
    problems.push(`exactly one service must have "edge": true (the gateway), found ${edges.length}: ${edges.map((e) => e.file).join(", ") || "none"}`);
  for (const e of edges) {
    if (e.public) problems.push(`${e.file}: public: the edge is not itself published by the gateway; set "public": false`);
    for (const api of e.apis)
      if (!manifests.some((m) => !m.edge && m.public && m.apis.includes(api)))
        problems.push(`${e.file}: apis: the edge serves "${api}", which no public service serves`);
  }
  for (const m of manifests) {
    if (m.public && m.apis.length === 0) problems.push(`${m.file}: public: a public service must serve at least one api`);
    if (!m.edge && manifests.some((x) => x !== m && x.dependencies.some((d) => d.service === m.name) && x.edge) && !m.public) {
      problems.push(`${m.file}: public: the edge calls it, so it must be public`);
    }
  }

  for (const key of ["role", "schema"] as const) {
    const seen = new Map<string, string>();
    for (const m of manifests) {
      const v = m.database?.[key];
      if (v === undefined) continue;
      if (seen.has(v)) problems.push(`${m.file}: database.${key}: "${v}" is also ${seen.get(v)}'s`);
      else seen.set(v, m.name);
    }
  }

  const cycle = findCycle(manifests);
  if (cycle) problems.push(`${byName.get(cycle[0]!)!.file}: dependencies: a cycle ${cycle.join(" -> ")}; calls must form a tree from the edge down`);
  return problems;
}

/** A dependency cycle as the names along it (first = last), or undefined. */
export function findCycle(manifests: readonly LoadedManifest[]): string[] | undefined {
  const byName = new Map(manifests.map((m) => [m.name, m]));
  const state = new Map<string, "visiting" | "done">();
  const visit = (name: string, path: string[]): string[] | undefined => {
    if (state.get(name) === "done") return undefined;
    if (state.get(name) === "visiting") return [...path.slice(path.indexOf(name)), name];
    state.set(name, "visiting");
    for (const d of byName.get(name)?.dependencies ?? []) {
      if (!byName.has(d.service) || d.service === name) continue;
      const found = visit(d.service, [...path, name]);
      if (found) return found;
    }
    state.set(name, "done");
    return undefined;
  };
  for (const m of [...manifests].sort((a, b) => a.name.localeCompare(b.name))) {
    const found = visit(m.name, []);
    if (found) return found;
  }
  return undefined;
}

/**
 * Dependencies before the services that call them (ties by name): the order
 * the launcher starts them in and compose lists them; stopping goes in reverse.
 */
export function dependencyOrder<T extends { name: string; dependencies: { service: string }[] }>(
  manifests: readonly T[],
  dependenciesOf: (m: T) => { service: string }[] = (m) => m.dependencies,
): T[] {
  const byName = new Map(manifests.map((m) => [m.name, m]));
  const out: T[] = [];
  const placed = new Set<string>();
  const place = (m: T, path: string[]) => {
    if (placed.has(m.name) || path.includes(m.name)) return;
    for (const d of [...dependenciesOf(m)].sort((a, b) => a.service.localeCompare(b.service))) {
      const dep = byName.get(d.service);
      if (dep) place(dep, [...path, m.name]);
    }
    placed.add(m.name);
    out.push(m);
  };
  for (const m of [...manifests].sort((a, b) => a.name.localeCompare(b.name))) place(m, []);
  return out;
}
