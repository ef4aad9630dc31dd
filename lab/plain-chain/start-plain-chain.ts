/**
 * Starts the plain Connect chain (this folder) as six processes, supervised
 * like the platform's (ServiceProcess from @platform/launcher), on free
 * loopback ports, on a database of its own on the platform's PostgreSQL
 * server (plain-database.ts): the platform's roles, schemas and migrations,
 * so the same tables, the same privileges, the same statements, and a
 * receipts outbox that only the plain receipts relay sends.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { findFreePort } from "@platform/embedded-postgres";
import { ServiceProcess } from "@platform/launcher";
import { plainDatabaseUrl, preparePlainDatabase } from "./plain-database.js";

/** Start order; the receipts worker and its mailer are off the request path but do each order's outbox work. */
export const plainServiceNames = ["mailer", "receipts", "pricing", "orders", "checkout", "gateway"] as const;
export type PlainServiceName = (typeof plainServiceNames)[number];

export interface PlainChain {
  /** HTTP/1.1 (Connect, gRPC-Web). */
  gatewayHttp1Url: string;
  /** h2c (gRPC, Connect, gRPC-Web). */
  gatewayH2cUrl: string;
  /** The plain chain's own database (superuser), for the bench's database ceiling. */
  databaseUrl: string;
  /** Each service's h2c address (the gateway's: its h2c port). The receipts worker serves nothing. */
  urls: Record<Exclude<PlainServiceName, "receipts">, string>;
  pid(name: PlainServiceName): number | undefined;
  stop(): Promise<void>;
}

const here = fileURLToPath(new URL(".", import.meta.url));

export async function startPlainChain(opts: {
  databaseUrl: string;
  logDir: string;
  host?: string;
  readyTimeoutMs?: number;
  /** Run each service from `<compiledDir>/lab/plain-chain/<name>.js` (compiled by the bench, lab/bench/compiled-chains.ts) instead of its TypeScript through tsx. */
  compiledDir?: string;
}): Promise<PlainChain> {
  const host = opts.host ?? "127.0.0.1";
  mkdirSync(opts.logDir, { recursive: true });
  const port = {} as Record<PlainServiceName, number>;
  for (const name of plainServiceNames) if (name !== "receipts") port[name] = await findFreePort(host);
  const gatewayH2cPort = await findFreePort(host);
  const url = (p: number) => `http://${host}:${p}`;
  const roleUrls = await preparePlainDatabase(opts.databaseUrl);
  const common = { HOST: host, PRICING_URL: url(port.pricing), ORDERS_URL: url(port.orders), CHECKOUT_URL: url(port.checkout), MAILER_URL: url(port.mailer) };
  const env: Record<PlainServiceName, Record<string, string>> = {
    mailer: { ...common, PORT: String(port.mailer) },
    receipts: { ...common, DATABASE_URL: roleUrls.receipts },
    pricing: { ...common, PORT: String(port.pricing), DATABASE_URL: roleUrls.pricing },
    orders: { ...common, PORT: String(port.orders), DATABASE_URL: roleUrls.orders },
    checkout: { ...common, PORT: String(port.checkout) },
    gateway: { ...common, PORT: String(port.gateway), H2C_PORT: String(gatewayH2cPort) },
  };
  const processes = Object.fromEntries(
    plainServiceNames.map((name) => [
      name,
      new ServiceProcess({
        name: `plain-${name}`,
        entry: opts.compiledDir ? join(opts.compiledDir, "lab", "plain-chain", `${name}.js`) : join(here, `${name}.ts`),
        env: env[name],
        logFile: join(opts.logDir, `plain-${name}.log`),
      }),
    ]),
  ) as Record<PlainServiceName, ServiceProcess>;
  // All at once: the bench stops the chain after its last leg, with nothing in flight.
  const stop = async () => {
    await Promise.all(plainServiceNames.map((name) => processes[name].stop(5000)));
  };
  try {
    for (const name of plainServiceNames) processes[name].start();
    await Promise.all(plainServiceNames.map((name) => processes[name].whenReady(opts.readyTimeoutMs ?? 60_000)));
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    gatewayHttp1Url: url(port.gateway),
    gatewayH2cUrl: url(gatewayH2cPort),
    databaseUrl: plainDatabaseUrl(opts.databaseUrl),
    urls: {
      mailer: url(port.mailer),
      pricing: url(port.pricing),
      orders: url(port.orders),
      checkout: url(port.checkout),
      gateway: url(gatewayH2cPort),
    },
    pid: (name) => processes[name].pid,
    stop,
  };
}
