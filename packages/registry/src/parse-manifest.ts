import { defaultBulkhead, type DependencyManifest, type ServiceManifest } from "./manifest.js";

const namePattern = /^[a-z][a-z0-9-]*$/;
const sqlNamePattern = /^[a-z][a-z0-9_]*$/;
const apiPattern = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*\.[A-Z][A-Za-z0-9]*$/;
const envNamePattern = /^[A-Z][A-Z0-9_]*$/;

/**
 * One manifest's shape, checked by hand against service.schema.json's rules
 * (no schema library at run time: the launcher reads these on every start).
 * Every problem is collected and named by its key, e.g.
 * `dependencies[1].maxQueue must be an integer >= 0, got "x"`.
 */
export function parseManifest(raw: unknown, folder: string): { manifest?: ServiceManifest; problems: string[] } {
  const problems: string[] = [];
  const show = (v: unknown) => JSON.stringify(v) ?? String(v);
  if (!isObject(raw)) return { problems: [`must be a JSON object, got ${show(raw)}`] };
  const known = new Set(["$schema", "name", "description", "ports", "apis", "public", "edge", "deploy", "dependencies", "database", "kubernetes", "launcher"]);
  for (const key of Object.keys(raw)) if (!known.has(key)) problems.push(`unknown key "${key}" (known: ${[...known].slice(1).join(", ")})`);

  const name = raw["name"];
  if (typeof name !== "string" || !namePattern.test(name)) problems.push(`name must match ${namePattern.source}, got ${show(name)}`);
  else if (name !== folder) problems.push(`name must be the folder's name "${folder}", got "${name}"`);
  const description = raw["description"];
  if (typeof description !== "string" || description.trim() === "" || description.includes("\n"))
    problems.push(`description must be one non-empty line, got ${show(description)}`);

  const ports = raw["ports"];
  const port = (key: string): number => {
    const v = isObject(ports) ? ports[key] : undefined;
    if (!isInt(v) || v < 1 || v > 65535) problems.push(`ports.${key} must be an integer port 1-65535, got ${show(v)}`);
    return v as number;
  };
  if (!isObject(ports)) problems.push(`ports must be { "rpc": <port>, "admin": <port> }, got ${show(ports)}`);
  else for (const key of Object.keys(ports)) if (key !== "rpc" && key !== "admin") problems.push(`ports.${key} is unknown (known: rpc, admin)`);
  const rpc = isObject(ports) ? port("rpc") : 0;
  const admin = isObject(ports) ? port("admin") : 0;
  if (isObject(ports) && rpc === admin && isInt(rpc)) problems.push(`ports.rpc and ports.admin must differ, both are ${rpc}`);

  const apis = raw["apis"];
  if (!Array.isArray(apis)) problems.push(`apis must be a list of fully-qualified protobuf services, got ${show(apis)}`);
  else {
    apis.forEach((a, i) => {
      if (typeof a !== "string" || !apiPattern.test(a))
        problems.push(`apis[${i}] must be a fully-qualified protobuf service like "shop.v1.StockService", got ${show(a)}`);
    });
    if (new Set(apis).size !== apis.length) problems.push(`apis lists a service twice`);
  }
  const isPublic = raw["public"];
  if (typeof isPublic !== "boolean") problems.push(`public must be true or false, got ${show(isPublic)}`);
  const deploy = raw["deploy"] ?? true;
  if (typeof deploy !== "boolean") problems.push(`deploy must be true or false, got ${show(deploy)}`);
  const edge = raw["edge"] ?? false;
  if (typeof edge !== "boolean") problems.push(`edge must be true or false, got ${show(edge)}`);

  const dependencies: (Omit<DependencyManifest, "minConcurrent"> & { minConcurrent?: number })[] = [];
  const deps = raw["dependencies"];
  if (!Array.isArray(deps)) problems.push(`dependencies must be a list (empty: calls nothing), got ${show(deps)}`);
  else
    deps.forEach((d, i) => {
      const at = `dependencies[${i}]`;
      if (!isObject(d)) {
        problems.push(`${at} must be { "service": ..., "maxConcurrent": ..., "maxQueue": ... }, got ${show(d)}`);
        return;
      }
      for (const key of Object.keys(d))
        if (!["service", "maxConcurrent", "minConcurrent", "maxQueue"].includes(key))
          problems.push(`${at}.${key} is unknown (known: service, maxConcurrent, minConcurrent, maxQueue)`);
      if (typeof d["service"] !== "string" || !namePattern.test(d["service"])) problems.push(`${at}.service must be a service name, got ${show(d["service"])}`);
      const int = (key: string, min: number, optional = false) => {
        const v = d[key];
        if (optional && v === undefined) return;
        if (!isInt(v) || v < min) problems.push(`${at}.${key} must be an integer >= ${min}, got ${show(v)}`);
      };
      int("maxConcurrent", 1);
      int("minConcurrent", 1, true);
      int("maxQueue", 0);
      if (isInt(d["minConcurrent"]) && isInt(d["maxConcurrent"]) && d["minConcurrent"] > d["maxConcurrent"])
        problems.push(`${at}.minConcurrent (${d["minConcurrent"]}) must not exceed maxConcurrent (${d["maxConcurrent"]})`);
      dependencies.push(d as unknown as (typeof dependencies)[number]);
    });

  const database = raw["database"];
  if (database !== undefined) {
    if (!isObject(database)) problems.push(`database must be { "schema": ..., "role": ... } or left out, got ${show(database)}`);
    else {
      for (const key of Object.keys(database)) if (key !== "schema" && key !== "role") problems.push(`database.${key} is unknown (known: schema, role)`);
      for (const key of ["schema", "role"]) {
        if (typeof database[key] !== "string" || !sqlNamePattern.test(database[key]))
          problems.push(`database.${key} must match ${sqlNamePattern.source}, got ${show(database[key])}`);
      }
    }
  }

  const k8s = raw["kubernetes"] ?? {};
  const kubernetes = { maxReplicas: 4, productionMaxReplicas: 0, env: {} as Record<string, string> };
  if (!isObject(k8s)) problems.push(`kubernetes must be an object, got ${show(k8s)}`);
  else {
    for (const key of Object.keys(k8s))
      if (!["maxReplicas", "productionMaxReplicas", "env"].includes(key))
        problems.push(`kubernetes.${key} is unknown (known: maxReplicas, productionMaxReplicas, env)`);
    for (const key of ["maxReplicas", "productionMaxReplicas"] as const) {
      const v = k8s[key];
      if (v === undefined) continue;
      if (!isInt(v) || v < 1) problems.push(`kubernetes.${key} must be an integer >= 1, got ${show(v)}`);
      else kubernetes[key] = v;
    }
    kubernetes.env = envMap(k8s["env"], "kubernetes.env", problems);
  }
  const start = raw["launcher"] ?? {};
  const launcher = { env: {} as Record<string, string> };
  if (!isObject(start)) problems.push(`launcher must be an object, got ${show(start)}`);
  else {
    for (const key of Object.keys(start)) if (key !== "env") problems.push(`launcher.${key} is unknown (known: env)`);
    launcher.env = envMap(start["env"], "launcher.env", problems);
  }
  if (kubernetes.productionMaxReplicas === 0) kubernetes.productionMaxReplicas = kubernetes.maxReplicas;

  if (problems.length > 0) return { problems };
  return {
    problems,
    manifest: {
      name: name as string,
      description: description as string,
      ports: { rpc, admin },
      apis: apis as string[],
      public: isPublic as boolean,
      edge: edge as boolean,
      deploy: deploy as boolean,
      dependencies: dependencies.map((d) => ({
        service: d.service,
        maxConcurrent: d.maxConcurrent,
        minConcurrent: d.minConcurrent ?? Math.min(defaultBulkhead.minConcurrent, d.maxConcurrent),
        maxQueue: d.maxQueue,
      })),
      ...(isObject(database) ? { database: { schema: database["schema"] as string, role: database["role"] as string } } : {}),
      kubernetes,
      launcher,
    },
  };
}

/** `{ "NAME": "value" }` with UPPER_CASE names and string values. */
function envMap(raw: unknown, at: string, problems: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  if (raw === undefined) return out;
  if (!isObject(raw)) {
    problems.push(`${at} must map variable names to strings, got ${JSON.stringify(raw)}`);
    return out;
  }
  for (const [k, v] of Object.entries(raw)) {
    if (!envNamePattern.test(k) || typeof v !== "string") problems.push(`${at}.${k} must be a string under an UPPER_CASE name, got ${JSON.stringify(v)}`);
    else out[k] = v;
  }
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function isInt(v: unknown): v is number {
  return Number.isInteger(v);
}
