/**
 * Both chains up at once against one embedded PostgreSQL: the platform as
 * `npm start` runs it (startPlatform via the lab, free ports, LOG_LEVEL as
 * shipped) and the plain Connect chain (lab/plain-chain) on the
 * platform's database, with what the bench needs from each: where to send
 * a leg and which processes to watch.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { plainDatabaseName } from "../plain-chain/plain-database.js";
import { startPlainChain, type PlainChain } from "../plain-chain/start-plain-chain.js";
import { startLabPlatform, type LabPlatform } from "../platform/lab-platform.js";
import { startBenchTokens, type BenchTokens } from "./bench-tokens.js";
import { backendChains, type BackendRow } from "./backend-chain.js";
import type { Cell, CountedService, System } from "./cells.js";
import type { Protocol, Target } from "./leg.js";
import { parentPid } from "./proc-stats.js";

export interface Systems {
  /** Where the database ceiling runs: the plain chain's database, whose receipts relay sends its receipts (db-ceiling.ts). */
  ceilingDatabaseUrl: string;
  /** The postmaster: its process tree's CPU is the database's. */
  postgresPid: number;
  pid(system: System, service: CountedService): number | undefined;
  /** The PostgreSQL backends working for each chain (or the database ceiling) now, by pid (backend-chain.ts). */
  backendChains(): Promise<Map<number, System | "db">>;
  /** Resolves once no receipt of that chain ("db": the ceiling's, the plain chain's) is pending, or after `drainTimeoutMs`. */
  drainReceipts(system: System | "db"): Promise<void>;
  /** Receipts that chain's outbox holds pending now (due, leased or waiting for a retry). */
  queuedReceipts(system: System): Promise<number>;
  target(system: System, cell: Cell): Target;
  close(): Promise<void>;
}

async function postmasterPid(databaseUrl: string): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const backend = (await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
    const parent = parentPid(backend);
    if (parent === undefined) throw new Error("bench: cannot find the postmaster (is PostgreSQL on this machine?)");
    return parent;
  } finally {
    await client.end();
  }
}

/** Longest wait for a chain's receipts to be sent after a leg: a backlog longer than this spills into the next leg. */
const drainTimeoutMs = 30_000;

/** Watches one database's receipts outbox (its pending receipts, due or leased). */
function queueWatch(databaseUrl: string): { drained(): Promise<void>; queued(): Promise<number>; close(): Promise<void> } {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1, application_name: "bench-queue-watch" });
  pool.on("error", () => {});
  return {
    async queued() {
      const r = await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM receipts.receipts WHERE state = 'pending'");
      return r.rows[0]?.n ?? 0;
    },
    async drained() {
      const until = performance.now() + drainTimeoutMs;
      while (performance.now() < until) {
        const r = await pool.query<{ empty: boolean }>("SELECT NOT EXISTS (SELECT 1 FROM receipts.receipts WHERE state = 'pending') AS empty");
        if (r.rows[0]?.empty) return;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    close: () => pool.end(),
  };
}

export interface SystemsOptions {
  /** "shipped" (the services' default, one line per request) unless an experiment asks otherwise. */
  platformLogLevel?: string;
  /** The platform's services from their dist/ ("build", `npm run build` done) or through tsx ("source"). */
  from?: "build" | "source";
  /** The plain chain's compiled entries (compiled-chains.ts); absent: its TypeScript through tsx. */
  plainCompiledDir?: string;
  /** The platform's gateway authenticates every call with a JWT (AUTH_MODE=jwt) and counts it against its tenant's quota (bench-tokens.ts). */
  jwt?: boolean;
}

export async function startSystems(log: (line: string) => void, opts: SystemsOptions = {}): Promise<Systems> {
  const tokens: BenchTokens | undefined = opts.jwt ? await startBenchTokens() : undefined;
  const platform: LabPlatform = await startLabPlatform("platform", {
    faultInjection: false,
    logLevel: opts.platformLogLevel ?? "shipped",
    ...(opts.from ? { from: opts.from } : {}),
    ...(tokens ? { env: tokens.gatewayEnv } : {}),
    onProgress: (l) => log(`platform: ${l}`),
  });
  let plain: PlainChain | undefined;
  const plainLogs = mkdtempSync(join(tmpdir(), "bench-plain-"));
  try {
    plain = await startPlainChain({
      databaseUrl: platform.databaseUrl,
      logDir: plainLogs,
      ...(opts.plainCompiledDir ? { compiledDir: opts.plainCompiledDir } : {}),
    });
    log(`plain chain ready: gateway ${plain.gatewayHttp1Url} (HTTP/1.1) and ${plain.gatewayH2cUrl} (h2c)`);
    const postgresPid = await postmasterPid(platform.databaseUrl);
    const p = plain;
    const queues = { platform: queueWatch(platform.databaseUrl), plain: queueWatch(p.databaseUrl) };
    const activity = new pg.Pool({ connectionString: platform.databaseUrl, max: 1, application_name: "bench-backend-watch" });
    activity.on("error", () => {});
    const gatewayUrl = (system: System, protocol: Protocol) =>
      system === "platform" ? platform.gatewayUrl : protocol === "grpc-h2c" ? p.gatewayH2cUrl : p.gatewayHttp1Url;
    return {
      ceilingDatabaseUrl: p.databaseUrl,
      postgresPid,
      pid: (system, service) => (system === "platform" ? platform.services[service].process.pid : p.pid(service)),
      async backendChains() {
        // The platform's database is the one its URL connects to (the server's default when it names none).
        const r = await activity.query<BackendRow & { current: string }>(
          "SELECT pid, datname, coalesce(application_name, '') AS \"applicationName\", current_database() AS current FROM pg_stat_activity",
        );
        return backendChains(r.rows, { platform: r.rows[0]?.current ?? "", plain: plainDatabaseName });
      },
      target(system, cell) {
        const baseUrl =
          cell.service === "gateway" ? gatewayUrl(system, cell.protocol) : system === "platform" ? platform.services[cell.service].url : p.urls[cell.service];
        // Called directly, checkout gets the key the gateway would have added.
        const authenticated = tokens && system === "platform" && cell.service === "gateway";
        return {
          kind: "rpc",
          baseUrl,
          protocol: cell.protocol,
          idempotencyHeader: cell.service === "checkout",
          ...(authenticated ? { headers: { authorization: `Bearer ${tokens.token}` } } : {}),
        };
      },
      drainReceipts: (system) => queues[system === "db" ? "plain" : system].drained(),
      queuedReceipts: (system) => queues[system].queued(),
      async close() {
        await Promise.all([queues.platform.close(), queues.plain.close(), activity.end()]);
        await p.stop();
        await platform.close();
        await tokens?.close();
        rmSync(plainLogs, { recursive: true, force: true });
      },
    };
  } catch (e) {
    await plain?.stop();
    await platform.close();
    rmSync(plainLogs, { recursive: true, force: true });
    throw e;
  }
}
