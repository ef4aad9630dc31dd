import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient, type Client, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import pg from "pg";
import { testClusterTemplates } from "@platform/embedded-postgres";
import { startPlatform, type Platform, type PlatformOptions, type ServiceName } from "@platform/launcher";
import { checkoutV1 } from "@platform/proto";
import { readServiceManifests } from "@platform/registry";
import { servicesFormFromEnv } from "./services-form.js";

export type Protocol = "connect-json" | "connect-binary" | "grpc" | "grpc-web";
export const protocols: Protocol[] = ["connect-json", "connect-binary", "grpc", "grpc-web"];

export interface TestPlatform extends Platform, TestClients {
  /** The bearer token of /admin/faults when started with `faultInjection: true`; undefined otherwise (fault injection off). */
  faultToken: string | undefined;
}

export interface TestPlatformOptions extends Partial<PlatformOptions> {
  /**
   * Enable fault injection in every service (FAULT_INJECTION=enabled with a
   * fresh FAULT_INJECTION_TOKEN) so that `setServiceFaults` works. Off by
   * default, as in production: only tests that inject faults ask for it.
   */
  faultInjection?: boolean;
  /**
   * The services whose manifest says `"deploy": false` (the examples) that
   * this platform starts too: `true` for all of them. By default none: nothing
   * deployed calls them, and each is a process of its own (about a second of
   * a core to start). Ignored when `manifests` is given.
   */
  undeployed?: true | readonly string[];
}

export function transportFor(baseUrl: string, protocol: Protocol): Transport {
  switch (protocol) {
    case "connect-json":
      return createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: false });
    case "connect-binary":
      return createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: true });
    case "grpc":
      return createGrpcTransport({ baseUrl });
    case "grpc-web":
      return createGrpcWebTransport({ baseUrl, httpVersion: "1.1" });
  }
}

/**
 * Where the test platforms' fresh databases are copied from: one cluster
 * made by initdb per machine (and PostgreSQL build), instead of an initdb
 * per platform (@platform/embedded-postgres, cluster-template.ts).
 */
export { testClusterTemplates };

/**
 * The platform as `npm start` runs it (embedded PostgreSQL, every deployed
 * service as a process on free loopback ports), in a fresh data directory
 * (its database copied from a template cluster, `testClusterTemplates`);
 * the examples only when asked for (`undeployed`); the services compiled
 * or from source as PLATFORM_SERVICES_FROM says (services-form.ts).
 */
export async function startTestPlatform(opts: TestPlatformOptions = {}): Promise<TestPlatform> {
  const dataDir = tempDataDir();
  const { faultInjection, undeployed, ...rest } = opts;
  const faultToken = faultInjection ? randomBytes(24).toString("hex") : undefined;
  const faultEnv: Record<string, string> = faultToken === undefined ? {} : { FAULT_INJECTION: "enabled", FAULT_INJECTION_TOKEN: faultToken };
  const manifests = rest.manifests ?? readServiceManifests().filter((m) => m.deploy || undeployed === true || undeployed?.includes(m.name));
  const from = rest.from ?? servicesFormFromEnv();
  const platform = await startPlatform({
    dataDir,
    freePorts: true,
    postgresTemplates: testClusterTemplates,
    ...rest,
    ...(from === undefined ? {} : { from }),
    manifests,
    env: { LOG_LEVEL: "info", ...faultEnv, ...opts.env },
  });
  const connected = connectTestClients(platform, async () => {
    await platform.stop();
    if (!process.env["KEEP_TEST_DATA"]) rmSync(dataDir, { recursive: true, force: true });
  });
  return { ...platform, ...connected, faultToken };
}

/** What a test uses to reach a running platform: public-API clients, SQL as superuser, metrics. */
export interface TestClients {
  client(protocol: Protocol): Client<typeof checkoutV1.CheckoutService>;
  sql<R extends pg.QueryResultRow = Record<string, unknown>>(text: string, values?: unknown[]): Promise<R[]>;
  metrics(service: ServiceName): Promise<string>;
  /** Closes the connections, then `stopPlatform`. */
  close(): Promise<void>;
}

/** Clients for the platform at these addresses; close() ends them, then calls `stopPlatform`. */
export function connectTestClients<P extends { gatewayUrl: string; databaseUrl: string; services: Record<ServiceName, { adminUrl: string }> }>(
  platform: P,
  stopPlatform: () => Promise<void>,
): P & TestClients {
  const pool = new pg.Pool({ connectionString: platform.databaseUrl, max: 2 });
  // Tests restart and terminate the database: an idle connection dying must not end the test process.
  pool.on("error", () => {});
  const clients = new Map<Protocol, Client<typeof checkoutV1.CheckoutService>>();
  return {
    ...platform,
    client(protocol) {
      let c = clients.get(protocol);
      if (!c) {
        c = createClient(checkoutV1.CheckoutService, transportFor(platform.gatewayUrl, protocol));
        clients.set(protocol, c);
      }
      return c;
    },
    async sql(text, values) {
      return (await pool.query(text, values)).rows;
    },
    async metrics(service) {
      const res = await fetch(`${platform.services[service].adminUrl}/metrics`);
      return res.text();
    },
    async close() {
      await pool.end();
      await stopPlatform();
    },
  };
}

/** Sum of a Prometheus counter's samples whose labels include all of `labels`. */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const lbls = Object.fromEntries([...(m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => lbls[k] === v)) sum += Number(m[3]);
  }
  return sum;
}

/** A fresh directory the database's unprivileged user can traverse (mkdtemp makes it 0700). */
export function tempDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "platform-test-"));
  chmodSync(dir, 0o755);
  return dir;
}

/** Replaces the faults in force in one service (PUT /admin/faults); the platform must have been started with `faultInjection: true`. */
export async function setServiceFaults(p: TestPlatform, service: keyof Platform["services"], faults: object): Promise<void> {
  if (p.faultToken === undefined) throw new Error("setServiceFaults: start the platform with startTestPlatform({ faultInjection: true }) to inject faults");
  const res = await fetch(`${p.services[service].adminUrl}/admin/faults`, {
    method: "PUT",
    headers: { authorization: `Bearer ${p.faultToken}` },
    body: JSON.stringify(faults),
  });
  if (!res.ok) throw new Error(`setting faults on ${service}: ${res.status} ${await res.text()}`);
}

/** Polls `check` until it returns true (bounded); fails with `what` otherwise. */
export async function eventually(check: () => boolean | Promise<boolean>, what: string, attempts = 100, intervalMs = 50): Promise<void> {
  for (let i = 0; i < attempts; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`timed out waiting for: ${what}`);
}

/**
 * How long a service process may take to start (to listen, to say it is
 * ready): the launcher's own readiness bound. A guard against hangs, not a
 * speed claim: a quiet machine needs a few seconds, while on 2 cores busy
 * with other test files starting one under tsx took longer than the 5-10 s
 * that counted polls used to allow.
 */
export const serviceStartLimitMs = 60_000;

/**
 * Polls `check` until it returns true while a service process starts.
 * Fails at once, with `exited()`'s description, if the process is gone
 * (the event that means it never will), else after `limitMs`.
 */
export async function untilStarted(
  check: () => boolean | Promise<boolean>,
  what: string,
  opts: { exited?: () => string | undefined; limitMs?: number; intervalMs?: number } = {},
): Promise<void> {
  const until = performance.now() + (opts.limitMs ?? serviceStartLimitMs);
  for (;;) {
    if (await check()) return;
    const gone = opts.exited?.();
    if (gone !== undefined) throw new Error(`${what}: the process exited (${gone})`);
    if (performance.now() >= until) throw new Error(`timed out after ${opts.limitMs ?? serviceStartLimitMs} ms waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 50));
  }
}

/** The JSON log lines a service wrote so far. */
export function logLines(p: Platform, service: keyof Platform["services"]): Record<string, unknown>[] {
  return readFileSync(p.services[service].logFile, "utf8")
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** A fresh superuser connection for one use, for tests whose database restarts under them. */
export async function withFreshConnection<T>(databaseUrl: string, fn: (db: pg.Client) => Promise<T>): Promise<T> {
  const db = new pg.Client({ connectionString: databaseUrl });
  db.on("error", () => {});
  await db.connect();
  try {
    return await fn(db);
  } finally {
    await db.end().catch(() => {});
  }
}
