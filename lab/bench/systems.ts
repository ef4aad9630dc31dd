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
import { startPlainChain, type PlainChain } from "../plain-chain/start-plain-chain.js";
import { startLabPlatform, type LabPlatform } from "../platform/lab-platform.js";
import type { Cell, Service, System } from "./cells.js";
import type { Protocol, Target } from "./leg.js";
import { parentPid } from "./proc-stats.js";

export interface Systems {
  databaseUrl: string;
  /** The postmaster: its process tree's CPU is the database's. */
  postgresPid: number;
  pid(system: System, service: Service): number | undefined;
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

/** `platformLogLevel`: "shipped" (the services' default, one line per request) unless an experiment asks otherwise. */
export async function startSystems(log: (line: string) => void, platformLogLevel = "shipped"): Promise<Systems> {
  const platform: LabPlatform = await startLabPlatform("platform", {
    faultInjection: false,
    logLevel: platformLogLevel,
    onProgress: (l) => log(`platform: ${l}`),
  });
  let plain: PlainChain | undefined;
  const plainLogs = mkdtempSync(join(tmpdir(), "bench-plain-"));
  try {
    plain = await startPlainChain({ databaseUrl: platform.databaseUrl, logDir: plainLogs });
    log(`plain chain ready: gateway ${plain.gatewayHttp1Url} (HTTP/1.1) and ${plain.gatewayH2cUrl} (h2c)`);
    const postgresPid = await postmasterPid(platform.databaseUrl);
    const p = plain;
    const gatewayUrl = (system: System, protocol: Protocol) =>
      system === "platform" ? platform.gatewayUrl : protocol === "grpc-h2c" ? p.gatewayH2cUrl : p.gatewayHttp1Url;
    return {
      databaseUrl: platform.databaseUrl,
      postgresPid,
      pid: (system, service) => (system === "platform" ? platform.services[service].process.pid : p.pid(service)),
      target(system, cell) {
        const baseUrl =
          cell.service === "gateway" ? gatewayUrl(system, cell.protocol) : system === "platform" ? platform.services[cell.service].url : p.urls[cell.service];
        // Called directly, checkout gets the key the gateway would have added.
        return { kind: "rpc", baseUrl, protocol: cell.protocol, idempotencyHeader: cell.service === "checkout" };
      },
      async close() {
        await p.stop();
        await platform.close();
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
