/**
 * `npm start`: PostgreSQL (embedded unless DATABASE_URL is set) and every
 * service with a services/<name>/service.json, as separate processes, in
 * dependency order. Ctrl-C or SIGTERM stops everything.
 *
 * `npm start -- --replicas orders=3,pricing=2` runs that many processes of
 * those services (orders-1, orders-2, ...), each supervised on its own; the
 * callers balance over them.
 *
 * npm runs it compiled (packages/launcher/dist/main.js, after `npm run
 * build`), and then it starts every service from its dist/main.js: no tsx
 * anywhere. Run from source (`node --import tsx packages/launcher/src/main.ts`)
 * it starts the services from source too (startPlatform's `from`).
 */
import "./require-node.js";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { findFreePort } from "@platform/embedded-postgres";
import { readServiceManifests, type LoadedManifest } from "@platform/registry";
import { parseReplicas, startPlatform } from "./start-platform.js";

const started = performance.now();
const say = (line: string) => process.stdout.write(`[platform] ${line}\n`);
const dataDir = resolve(process.env["DATA_DIR"] ?? ".data");
const gatewayPort = Number(process.env["GATEWAY_PORT"] ?? 8080);
// FREE_PORTS=1 puts every internal and operator port on a free one, to run
// a second copy beside the first (the tests do).
const freePorts = process.env["FREE_PORTS"] === "1";

let stopping = false;
let manifests: LoadedManifest[];
let replicas: Record<string, number>;
try {
  const { values } = parseArgs({ options: { replicas: { type: "string", default: "" } }, strict: true });
  replicas = parseReplicas(values.replicas);
  manifests = readServiceManifests();
} catch (e) {
  say(`failed to start: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
}
// GATEWAY_PORT moves the edge; with FREE_PORTS its operator port moves too.
const edges = manifests.filter((m) => m.edge);
const edgeAdminPorts = await Promise.all(edges.map((m) => (freePorts ? findFreePort("127.0.0.1") : m.ports.admin)));
const platform = await startPlatform({
  dataDir,
  ...(process.env["DATABASE_URL"] ? { databaseUrl: process.env["DATABASE_URL"] } : {}),
  postgresPort: Number(process.env["EMBEDDED_POSTGRES_PORT"] ?? 54329),
  ports: Object.fromEntries(edges.map((m, i) => [m.name, { port: gatewayPort, adminPort: edgeAdminPorts[i]! }])),
  freePorts,
  manifests,
  replicas,
  env: { LOG_LEVEL: process.env["LOG_LEVEL"] ?? "info" },
  onProgress: (line) => {
    if (!stopping) say(line);
  },
}).catch((e: unknown) => {
  say(`failed to start: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});

say(`logs in ${dataDir}/logs/<service or replica>.log`);
say(`ready in ${Math.round(performance.now() - started)} ms: gateway listening on ${platform.gatewayUrl}`);
const operatorUrls = Object.values(platform.replicas).flatMap((rs) => rs.map((s) => s.adminUrl));
say(`operator ports (/metrics, /admin): ${operatorUrls.join(" ")}`);
say(`audit it: npm run audit -- --live ${operatorUrls.join(" ")}`);
say(`try: curl -s -X POST -H 'content-type: application/json' -d '{}' ${platform.gatewayUrl}/checkout.v1.CheckoutService/ListProducts`);

const stop = (signal: string) => {
  if (stopping) return;
  stopping = true;
  say(`${signal}: stopping services, then PostgreSQL`);
  platform.stop().then(
    () => {
      say("stopped");
      process.exit(0);
    },
    (e: unknown) => {
      say(`error while stopping: ${String(e)}`);
      process.exit(1);
    },
  );
};
process.on("SIGINT", () => stop("SIGINT"));
process.on("SIGTERM", () => stop("SIGTERM"));
