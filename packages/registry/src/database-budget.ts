/**
 * The database connection budget in Kubernetes: how many connections each
 * overlay's PostgreSQL allows (deploy/k8s/postgres.json, a fact about the
 * server, written by hand), and the pool per pod (DB_POOL_MAX) of each
 * service with a database, derived from it.
 *
 * At an overlay's largest scale a service holds (maxReplicas + maxSurge) x
 * DB_POOL_MAX connections. A service whose manifest sets
 * kubernetes.env.DB_POOL_MAX keeps it (the receipts worker sizes its pool
 * from its queue). Every other one gets the same pool: the default (5)
 * while the server has room for it, less once more services share the
 * server, down to 2. Below that the manifests ask for more than the server
 * allows, and planning fails with a message naming the overlay, the
 * server's numbers and each service's share.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { LoadedManifest } from "./manifest.js";

/** Where the servers are declared, from the repository root. */
export const postgresServersFile = "deploy/k8s/postgres.json";

/** The pool a service gets when the server has room, and the least it may get. */
export const defaultPoolMax = 5;
export const minPoolMax = 2;
/** The rolling update's extra pod (maxSurge in deploy/k8s/templates). */
const maxSurge = 1;

export interface PostgresServer {
  /** The server's max_connections. */
  maxConnections: number;
  /** Connections kept for superusers, psql, backups and exporters. */
  reserved: number;
  /** The HPA ceiling the overlay gives every service: a number, or "manifest" (kubernetes.maxReplicas) or "production" (kubernetes.productionMaxReplicas). */
  maxReplicas: number | "manifest" | "production";
}

/** deploy/k8s/postgres.json: overlay name -> its server. */
export function readPostgresServers(root: string): Record<string, PostgresServer> {
  const path = join(root, postgresServersFile);
  if (!existsSync(path)) throw new Error(`${postgresServersFile} is missing: it declares each overlay's PostgreSQL (max_connections), docs/scaling.md`);
  const raw = JSON.parse(readFileSync(path, "utf8")) as { overlays?: Record<string, Partial<PostgresServer>> };
  const problems: string[] = [];
  const servers: Record<string, PostgresServer> = {};
  for (const [overlay, s] of Object.entries(raw.overlays ?? {})) {
    const at = `${postgresServersFile}: overlays.${overlay}`;
    const count = (v: unknown, key: string, min: number) => {
      if (typeof v !== "number" || !Number.isInteger(v) || v < min)
        problems.push(`${at}.${key}: expected an integer of at least ${min}, got ${JSON.stringify(v)}`);
    };
    count(s.maxConnections, "maxConnections", 1);
    count(s.reserved, "reserved", 0);
    if (s.maxReplicas !== "manifest" && s.maxReplicas !== "production") count(s.maxReplicas, "maxReplicas", 1);
    if (typeof s.maxConnections === "number" && typeof s.reserved === "number" && s.reserved >= s.maxConnections)
      problems.push(`${at}.reserved: ${s.reserved} leaves nothing of maxConnections ${s.maxConnections}`);
    servers[overlay] = s as PostgresServer;
  }
  if (Object.keys(servers).length === 0) problems.push(`${postgresServersFile}: overlays: expected at least one overlay`);
  if (problems.length > 0) throw new Error(`invalid ${postgresServersFile}:\n  - ${problems.join("\n  - ")}`);
  return servers;
}

/** The connections an overlay's services may hold in all. */
export const connectionBudget = (s: PostgresServer) => s.maxConnections - s.reserved;

export interface PoolPlan {
  /** Service name -> DB_POOL_MAX per pod, for every deployed service with a database. */
  pools: Record<string, number>;
  /** Whether the pool was set in the manifest (kubernetes.env.DB_POOL_MAX) rather than derived. */
  fixed: Record<string, boolean>;
  /** The pool of every service whose manifest sets none. */
  derived: number;
}

/** The HPA ceiling of `m` in an overlay. */
export function replicasIn(server: PostgresServer, m: LoadedManifest): number {
  if (server.maxReplicas === "manifest") return m.kubernetes.maxReplicas;
  if (server.maxReplicas === "production") return m.kubernetes.productionMaxReplicas;
  return server.maxReplicas;
}

/** `orders (4 + 1) x 5 = 25`, for comments and messages. */
export function connectionTerm(server: PostgresServer, m: LoadedManifest, pool: number): string {
  const replicas = replicasIn(server, m);
  return `${m.name} (${replicas} + ${maxSurge}) x ${pool} = ${(replicas + maxSurge) * pool}`;
}

/** The connections the services hold at the overlay's largest scale. */
export function connectionsAtMost(server: PostgresServer, withDatabase: readonly LoadedManifest[], plan: PoolPlan): number {
  return withDatabase.reduce((n, m) => n + (replicasIn(server, m) + maxSurge) * (plan.pools[m.name] ?? 0), 0);
}

/**
 * The pool of every deployed service with a database, the largest that
 * fits every overlay's server (at most defaultPoolMax); throws when even
 * minPoolMax does not fit one of them.
 */
export function planDatabasePools(manifests: readonly LoadedManifest[], servers: Record<string, PostgresServer>): PoolPlan {
  const withDatabase = manifests.filter((m) => m.deploy && m.database);
  const setInManifest = (m: LoadedManifest) => m.kubernetes.env["DB_POOL_MAX"];
  const fixed = withDatabase.filter((m) => setInManifest(m) !== undefined);
  const derived = withDatabase.filter((m) => setInManifest(m) === undefined);
  let pool = defaultPoolMax;
  for (const server of Object.values(servers)) {
    const room = connectionBudget(server) - fixed.reduce((n, m) => n + (replicasIn(server, m) + maxSurge) * Number(setInManifest(m)), 0);
    const pods = derived.reduce((n, m) => n + replicasIn(server, m) + maxSurge, 0);
    if (pods > 0) pool = Math.min(pool, Math.floor(room / pods));
  }
  const plan: PoolPlan = {
    pools: Object.fromEntries(withDatabase.map((m) => [m.name, setInManifest(m) !== undefined ? Number(setInManifest(m)) : pool])),
    fixed: Object.fromEntries(withDatabase.map((m) => [m.name, setInManifest(m) !== undefined])),
    derived: pool,
  };
  if (derived.length === 0 || pool >= minPoolMax) {
    const over = Object.entries(servers).filter(([, s]) => connectionsAtMost(s, withDatabase, plan) > connectionBudget(s));
    if (over.length === 0) return plan;
  }
  // Too many: report each overlay at the least pool the derived services may have.
  const least: PoolPlan = { ...plan, pools: Object.fromEntries(Object.entries(plan.pools).map(([name, p]) => [name, plan.fixed[name] ? p : minPoolMax])) };
  const lines = Object.entries(servers)
    .filter(([, s]) => connectionsAtMost(s, withDatabase, least) > connectionBudget(s))
    .map(
      ([overlay, s]) =>
        `${overlay}: its PostgreSQL allows ${connectionBudget(s)} (max_connections ${s.maxConnections} less ${s.reserved} reserved), ` +
        `the services need ${connectionsAtMost(s, withDatabase, least)} at their largest: ${withDatabase.map((m) => connectionTerm(s, m, least.pools[m.name] ?? 0)).join(", ")}`,
    );
  throw new Error(
    [
      `database connections: the services with a database need more than the server allows, even with DB_POOL_MAX ${minPoolMax} per pod where the manifest does not set it:`,
      ...lines.map((l) => `  - ${l}`),
      `  Raise the server's max_connections and ${postgresServersFile} together, lower a manifest's kubernetes.maxReplicas or kubernetes.env.DB_POOL_MAX, or put PgBouncer in between (docs/scaling.md).`,
    ].join("\n"),
  );
}
