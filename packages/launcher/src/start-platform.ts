import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { findFreePort, startEmbeddedPostgres, type EmbeddedPostgres } from "@platform/embedded-postgres";
import { ServiceProcess } from "./service-process.js";
import { ensureServiceRoles } from "./service-roles.js";

// Stopped in reverse: the edge first, the receipts worker and its mailer last.
export const serviceNames = ["mailer", "receipts", "pricing", "orders", "checkout", "gateway"] as const;
export type ServiceName = (typeof serviceNames)[number];

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));

export const defaultPorts: Record<ServiceName, { port: number; adminPort: number }> = {
  gateway: { port: 8080, adminPort: 9080 },
  checkout: { port: 8081, adminPort: 9081 },
  orders: { port: 8082, adminPort: 9082 },
  pricing: { port: 8083, adminPort: 9083 },
  receipts: { port: 8084, adminPort: 9084 },
  mailer: { port: 8085, adminPort: 9085 },
};

export interface PlatformOptions {
  /** PostgreSQL data (when embedded) goes to `<dataDir>/postgres`, service logs to `<dataDir>/logs`. */
  dataDir: string;
  /** Use this PostgreSQL instead of starting the embedded one. */
  databaseUrl?: string;
  host?: string;
  /** Fixed ports; 0 or absent with `freePorts` picks free ones. */
  ports?: Partial<Record<ServiceName, { port: number; adminPort: number }>>;
  /** Pick free ports for everything not given in `ports` (tests). */
  freePorts?: boolean;
  /** Port of the embedded PostgreSQL; default: a free port. */
  postgresPort?: number;
  /** Environment for every service (e.g. LOG_LEVEL), then per service. */
  env?: Record<string, string>;
  serviceEnv?: Partial<Record<ServiceName, Record<string, string>>>;
  /** Progress lines for a human. */
  onProgress?: (line: string) => void;
  readyTimeoutMs?: number;
  /** Services beyond the four, e.g. made by `npm run new-service` (docs/adding-a-service.md). */
  extraServices?: ExtraService[];
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

/**
 * A service beyond the four. It gets what they get (HOST, PORT, ADMIN_PORT,
 * every *_URL, opts.env) plus, with `database`, DATABASE_URL (with the
 * embedded database: as its own role, owning the schema named like the
 * service with dashes as underscores). Every service gets its `<NAME>_URL`.
 * Extras start with the four and stop after them.
 */
export interface ExtraService {
  name: string;
  /** Used unless `freePorts`. */
  port: number;
  adminPort: number;
  database?: boolean;
  env?: Record<string, string>;
}

export interface RunningService<N extends string = ServiceName> {
  name: N;
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
  services: Record<ServiceName, RunningService>;
  /** One entry per `extraServices` item, by name. */
  extraServices: Record<string, RunningService<string>>;
  /** The embedded database, when we started it. */
  postgres: EmbeddedPostgres | undefined;
  /** Stops services (draining), then the embedded database. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts PostgreSQL (embedded unless a URL is given) and the four services
 * as separate processes talking Connect over the network, the way
 * `npm start` and the end-to-end tests do; resolves when every service
 * reports that it serves.
 */
export async function startPlatform(opts: PlatformOptions): Promise<Platform> {
  const host = opts.host ?? "127.0.0.1";
  const from = opts.from ?? launcherForm;
  const progress = opts.onProgress ?? (() => {});
  const logDir = join(opts.dataDir, "logs");
  mkdirSync(logDir, { recursive: true });

  const extras = opts.extraServices ?? [];
  const roleOf = (name: string) => name.replaceAll("-", "_");
  for (const x of extras) {
    if (!/^[a-z][a-z0-9-]*$/.test(x.name) || (serviceNames as readonly string[]).includes(x.name) || extras.filter((y) => y.name === x.name).length > 1) {
      throw new Error(`extra service name ${JSON.stringify(x.name)} is invalid or taken`);
    }
  }
  // Before anything starts: a missing build fails here, not with a database left running.
  const entries = Object.fromEntries([...serviceNames, ...extras.map((x) => x.name)].map((name) => [name, serviceEntry(name, from)]));

  let postgres: EmbeddedPostgres | undefined;
  let databaseUrl = opts.databaseUrl;
  if (databaseUrl === undefined) {
    const started = performance.now();
    postgres = await startEmbeddedPostgres({
      dataDir: join(opts.dataDir, "postgres"),
      port: opts.postgresPort ?? 0,
      host,
    });
    databaseUrl = postgres.url;
    progress(`postgres   ready on ${host}:${postgres.port} (embedded, ${Math.round(performance.now() - started)} ms, data in ${join(opts.dataDir, "postgres")})`);
  }


  // With the embedded database we own the server: one role per service. An
  // external DATABASE_URL is used as given (its operator manages roles).
  const serviceUrls: Record<string, string> = postgres
    ? await ensureServiceRoles(databaseUrl, ["orders", "pricing", "receipts", ...extras.filter((x) => x.database).map((x) => roleOf(x.name))])
    : {};

  const ports = {} as Record<ServiceName, { port: number; adminPort: number }>;
  for (const name of serviceNames) {
    const given = opts.ports?.[name];
    ports[name] = given ?? (opts.freePorts ? { port: await findFreePort(host), adminPort: await findFreePort(host) } : defaultPorts[name]);
  }
  const url = (name: ServiceName) => `http://${host}:${ports[name].port}`;
  const extraPorts: Record<string, { port: number; adminPort: number }> = {};
  const extraUrls: Record<string, string> = {};
  for (const x of extras) {
    const p = opts.freePorts ? { port: await findFreePort(host), adminPort: await findFreePort(host) } : { port: x.port, adminPort: x.adminPort };
    extraPorts[x.name] = p;
    extraUrls[`${x.name.toUpperCase().replace(/[^A-Z0-9]/g, "_")}_URL`] = `http://${host}:${p.port}`;
  }

  const services = {} as Record<ServiceName, RunningService>;
  for (const name of serviceNames) {
    const logFile = join(logDir, `${name}.log`);
    const env: Record<string, string> = {
      HOST: host,
      PORT: String(ports[name].port),
      ADMIN_PORT: String(ports[name].adminPort),
      PRICING_URL: url("pricing"),
      ORDERS_URL: url("orders"),
      CHECKOUT_URL: url("checkout"),
      MAILER_URL: url("mailer"),
      ...extraUrls,
      ...(name === "orders" || name === "pricing" || name === "receipts" ? { DATABASE_URL: serviceUrls[name] ?? databaseUrl } : {}),
      // npm start and the tests place orders on a fresh database; deployments bring their own catalogue.
      ...(name === "pricing" ? { DEMO_CATALOGUE: "true" } : {}),
      ...opts.env,
      ...opts.serviceEnv?.[name],
    };
    const proc = new ServiceProcess(
      { name, entry: entries[name]!, env, logFile },
      {
        onExit: (n, code, signal, restartInMs) =>
          progress(
            restartInMs === undefined
              ? `${n} exited (${signal ?? code}) and will not be restarted`
              : `${n} exited (${signal ?? code}); restarting in ${restartInMs} ms`,
          ),
      },
    );
    services[name] = {
      name,
      ...ports[name],
      url: url(name),
      adminUrl: `http://${host}:${ports[name].adminPort}`,
      process: proc,
      logFile,
    };
  }
  const extraServices: Record<string, RunningService<string>> = {};
  for (const x of extras) {
    const p = extraPorts[x.name]!;
    const logFile = join(logDir, `${x.name}.log`);
    const env: Record<string, string> = {
      HOST: host,
      PORT: String(p.port),
      ADMIN_PORT: String(p.adminPort),
      PRICING_URL: url("pricing"),
      ORDERS_URL: url("orders"),
      CHECKOUT_URL: url("checkout"),
      ...extraUrls,
      ...(x.database ? { DATABASE_URL: serviceUrls[roleOf(x.name)] ?? databaseUrl } : {}),
      ...opts.env,
      ...x.env,
    };
    const proc = new ServiceProcess(
      { name: x.name, entry: entries[x.name]!, env, logFile },
      { onExit: (n, code, signal, restartInMs) => progress(`${n} exited (${signal ?? code})${restartInMs === undefined ? " and will not be restarted" : `; restarting in ${restartInMs} ms`}`) },
    );
    extraServices[x.name] = { name: x.name, ...p, url: `http://${host}:${p.port}`, adminUrl: `http://${host}:${p.adminPort}`, process: proc, logFile };
  }
  const everyService: RunningService<string>[] = [...serviceNames.map((name) => services[name]), ...Object.values(extraServices)];

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      // Edge first, so nothing new enters while the inside drains.
      for (const name of [...serviceNames].reverse()) await services[name].process.stop(15_000);
      for (const x of Object.values(extraServices)) await x.process.stop(15_000);
      await postgres?.stop("fast");
    })());

  try {
    for (const s of everyService) s.process.start();
    await Promise.all(
      everyService.map(async (s) => {
        await s.process.whenReady(opts.readyTimeoutMs ?? 60_000);
        progress(`${s.name.padEnd(10)} ready on ${s.url} (pid ${s.process.pid}, metrics ${s.adminUrl}/metrics)`);
      }),
    );
  } catch (e) {
    await stop();
    throw e;
  }

  return { gatewayUrl: url("gateway"), databaseUrl, services, extraServices, postgres, stop };
}
