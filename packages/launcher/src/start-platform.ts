import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { findFreePort, startEmbeddedPostgres, type EmbeddedPostgres } from "@platform/embedded-postgres";
import { effectiveDependencies, envPrefix, readServiceManifests, type LoadedManifest } from "@platform/registry";
import type { ServiceName } from "./service-names.generated.js";
import { ServiceProcess } from "./service-process.js";
import { ensureServiceRoles } from "./service-roles.js";

export { serviceNames, type ServiceName } from "./service-names.generated.js";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));

export interface PlatformOptions {
  /** PostgreSQL data (when embedded) goes to `<dataDir>/postgres`, service logs to `<dataDir>/logs`. */
  dataDir: string;
  /** Use this PostgreSQL instead of starting the embedded one. */
  databaseUrl?: string;
  host?: string;
  /** Fixed ports by service; absent: the manifest's, or free ones with `freePorts`. */
  ports?: Partial<Record<string, { port: number; adminPort: number }>>;
  /** Pick free ports for everything not given in `ports` (tests). */
  freePorts?: boolean;
  /**
   * How many processes run a service (default 1), e.g. `{ orders: 3 }`.
   * Replicas are named `orders-1`, `orders-2`, ...; the first takes the
   * service's port, the others free ones; callers get every replica's
   * address in `<NAME>_ADDRESSES` and balance over them.
   */
  replicas?: Partial<Record<string, number>>;
  /** Port of the embedded PostgreSQL; default: a free port. */
  postgresPort?: number;
  /**
   * A folder of cluster templates for the embedded PostgreSQL: a fresh data
   * directory gets a copy of a cluster made there once instead of its own
   * initdb (the test platforms; `npm start` leaves it unset).
   */
  postgresTemplates?: string;
  /** Environment for every service (e.g. LOG_LEVEL), then per service. */
  env?: Record<string, string>;
  serviceEnv?: Partial<Record<string, Record<string, string>>>;
  /** Progress lines for a human. */
  onProgress?: (line: string) => void;
  readyTimeoutMs?: number;
  /** The services to start; default: every services/<name>/service.json (readServiceManifests). */
  manifests?: readonly LoadedManifest[];
  /**
   * Run each service from its compiled `dist/main.js` ("build", what `npm
   * start` and the image run; `npm run build` first) or from `src/main.ts`
   * through tsx ("source"). Default: the way this launcher itself runs, so
   * the compiled `npm start` starts compiled services and the tests and the
   * lab, which run on tsx, start the sources they were given.
   */
  from?: "build" | "source";
}

/** "build" when this module is the compiled one (dist/*.js), "source" under tsx. */
export const launcherForm: "build" | "source" = import.meta.url.endsWith(".ts") ? "source" : "build";

/** A service's entry file for the given form; a missing build is an error saying what to run. */
export function serviceEntry(name: string, from: "build" | "source"): string {
  const entry = from === "build" ? join(repoRoot, "services", name, "dist", "main.js") : join(repoRoot, "services", name, "src", "main.ts");
  if (!existsSync(entry)) throw new Error(`${entry} does not exist${from === "build" ? " (run `npm run build`)" : ""}`);
  return entry;
}

export interface RunningService {
  name: string;
  /** `orders-2` when the service runs as several replicas; else the service's name. */
  replica: string;
  port: number;
  adminPort: number;
  /** http://host:port */
  url: string;
  adminUrl: string;
  process: ServiceProcess;
  logFile: string;
}

export interface Platform {
  gatewayUrl: string;
  databaseUrl: string;
  /**
   * Every service started, by name. Typed by the names generated from the
   * manifests (service-names.generated.ts); a service whose manifest is
   * newer than that file is here too, under its name, untyped until
   * `npm run generate:services`.
   */
  services: Record<ServiceName, RunningService>;
  /** Every process of each service (one, unless `replicas` asked for more); `services` holds the first. */
  replicas: Record<string, RunningService[]>;
  /** The embedded database, when we started it. */
  postgres: EmbeddedPostgres | undefined;
  /** Stops services (draining), then the embedded database. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts PostgreSQL (embedded unless a URL is given) and every service with
 * a manifest (services/<name>/service.json), as separate processes talking
 * Connect over the network, the way `npm start` and the end-to-end tests do;
 * resolves when every service reports that it serves.
 *
 * Each service gets HOST, PORT, ADMIN_PORT, the `<NAME>_URL` of each service
 * it calls (its manifest's dependencies), with a database DATABASE_URL (with
 * the embedded database: as its own role, owning its own schema), its
 * manifest's "launcher.env", then `env` and `serviceEnv`. A service run as
 * several replicas gives its callers `<NAME>_ADDRESSES` as well, and each
 * replica its REPLICA_NAME. Services start in
 * dependency order (callees first) and stop the other way round.
 */
export async function startPlatform(opts: PlatformOptions): Promise<Platform> {
  const host = opts.host ?? "127.0.0.1";
  const from = opts.from ?? launcherForm;
  const progress = opts.onProgress ?? (() => {});
  const logDir = join(opts.dataDir, "logs");
  mkdirSync(logDir, { recursive: true });

  const manifests = opts.manifests ?? readServiceManifests(repoRoot);
  const edge = manifests.find((m) => m.edge);
  if (edge === undefined) throw new Error('no service has "edge": true: nothing to publish (services/*/service.json)');
  // Before anything starts: a missing build fails here, not with a database left running.
  const entries = new Map(manifests.map((m) => [m.name, serviceEntry(m.name, from)]));
  const replicaCount = replicaCounts(manifests, opts.replicas ?? {});

  let postgres: EmbeddedPostgres | undefined;
  let databaseUrl = opts.databaseUrl;
  if (databaseUrl === undefined) {
    const started = performance.now();
    postgres = await startEmbeddedPostgres({
      dataDir: join(opts.dataDir, "postgres"),
      port: opts.postgresPort ?? 0,
      host,
      ...(opts.postgresTemplates === undefined ? {} : { templates: opts.postgresTemplates }),
    });
    databaseUrl = postgres.url;
    progress(
      `postgres   ready on ${host}:${postgres.port} (embedded, ${Math.round(performance.now() - started)} ms, data in ${join(opts.dataDir, "postgres")})`,
    );
  }

  // With the embedded database we own the server: one role per service. An
  // external DATABASE_URL is used as given (its operator manages roles).
  const databases = manifests.flatMap((m) => (m.database ? [m.database] : []));
  const roleUrls: Record<string, string> = postgres ? await ensureServiceRoles(databaseUrl, databases) : {};

  const ports = new Map<string, { port: number; adminPort: number }[]>();
  for (const m of manifests) {
    const given = opts.ports?.[m.name];
    const first =
      given ?? (opts.freePorts ? { port: await findFreePort(host), adminPort: await findFreePort(host) } : { port: m.ports.rpc, adminPort: m.ports.admin });
    const all = [first];
    for (let i = 1; i < replicaCount(m.name); i++) all.push({ port: await findFreePort(host), adminPort: await findFreePort(host) });
    ports.set(m.name, all);
  }
  const url = (name: string) => `http://${host}:${ports.get(name)![0]!.port}`;
  const addresses = (name: string) => ports.get(name)!.map((p) => `${host}:${p.port}`);

  const running: RunningService[] = [];
  for (const m of manifests) {
    const dependencies = effectiveDependencies(m, manifests).map((d) => d.service);
    const count = replicaCount(m.name);
    for (const [i, p] of ports.get(m.name)!.entries()) {
      const replica = count > 1 ? `${m.name}-${i + 1}` : m.name;
      const logFile = join(logDir, `${replica}.log`);
      const env: Record<string, string> = {
        HOST: host,
        PORT: String(p.port),
        ADMIN_PORT: String(p.adminPort),
        ...Object.fromEntries(dependencies.map((d) => [`${envPrefix(d)}_URL`, url(d)])),
        ...Object.fromEntries(dependencies.filter((d) => replicaCount(d) > 1).map((d) => [`${envPrefix(d)}_ADDRESSES`, addresses(d).join(",")])),
        ...(count > 1 ? { REPLICA_NAME: replica } : {}),
        ...(m.database ? { DATABASE_URL: roleUrls[m.database.role] ?? databaseUrl } : {}),
        ...m.launcher.env,
        ...opts.env,
        ...opts.serviceEnv?.[m.name],
      };
      const proc = new ServiceProcess(
        { name: replica, entry: entries.get(m.name)!, env, logFile },
        {
          onExit: (n, code, signal, restartInMs) =>
            progress(
              restartInMs === undefined
                ? `${n} exited (${signal ?? code}) and will not be restarted`
                : `${n} exited (${signal ?? code}); restarting in ${restartInMs} ms`,
            ),
        },
      );
      running.push({ name: m.name, replica, ...p, url: `http://${host}:${p.port}`, adminUrl: `http://${host}:${p.adminPort}`, process: proc, logFile });
    }
  }
  const replicas: Record<string, RunningService[]> = {};
  for (const s of running) replicas[s.name] = [...(replicas[s.name] ?? []), s];
  const services = Object.fromEntries(Object.entries(replicas).map(([name, rs]) => [name, rs[0]!])) as Platform["services"];

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      // Edge first (reverse dependency order), so nothing new enters while the inside drains.
      for (const s of running.toReversed()) await s.process.stop(15_000);
      await postgres?.stop("fast");
    })());

  try {
    for (const s of running) s.process.start();
    await Promise.all(
      running.map(async (s) => {
        await s.process.whenReady(opts.readyTimeoutMs ?? 60_000);
        progress(`${s.replica.padEnd(10)} ready on ${s.url} (pid ${s.process.pid}, metrics ${s.adminUrl}/metrics)`);
      }),
    );
  } catch (e) {
    await stop();
    throw e;
  }

  return { gatewayUrl: url(edge.name), databaseUrl, services, replicas, postgres, stop };
}

/**
 * How many replicas each service runs; refuses a name no manifest has, a
 * count below 1, and more than one edge (it alone holds the public port).
 */
function replicaCounts(manifests: readonly LoadedManifest[], asked: Partial<Record<string, number>>): (name: string) => number {
  for (const [name, n] of Object.entries(asked)) {
    const m = manifests.find((x) => x.name === name);
    if (m === undefined) throw new Error(`replicas: no service is named "${name}" (services: ${manifests.map((x) => x.name).join(", ")})`);
    if (n === undefined || !Number.isInteger(n) || n < 1 || n > 16) throw new Error(`replicas: ${name}=${String(n)} must be a whole number from 1 to 16`);
    if (m.edge && n > 1) throw new Error(`replicas: ${name} is the edge and holds the one public port; run it once`);
  }
  return (name) => asked[name] ?? 1;
}

/** Parses `orders=3,pricing=2` (npm start's --replicas). */
export function parseReplicas(spec: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const pair of spec
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p !== "")) {
    const m = /^([a-z][a-z0-9-]*)=(\d+)$/.exec(pair);
    if (!m) throw new Error(`--replicas takes service=count pairs separated by commas (orders=3,pricing=2), got "${pair}"`);
    out[m[1]!] = Number(m[2]);
  }
  return out;
}
