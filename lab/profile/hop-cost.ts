/**
 * CPU time per request of one platform hop against a plain Connect server,
 * in one process: serve() with the gateway's configuration and edge (its
 * listener, request gate, admission, request context and watchdog, the
 * server interceptors with their log line and metrics, CORS, API keys,
 * rate limit, criticality) and, beside it, `connectNodeAdapter` on a plain
 * `http2.createServer`, both answering test.v1.Counter's Get with nothing
 * at all. One gRPC client (createGrpcTransport, h2c) per server, in the
 * same process, sends the load; rounds alternate between the two servers,
 * so whatever else the machine does falls on both, and the difference of
 * the process's CPU time (user + system) per request is what the
 * platform's server side adds (the client's own work is the same on both).
 *
 *   node --import tsx lab/profile/hop-cost.ts [requests per round] [concurrency] [rounds] > /dev/null
 *
 * The platform's request log lines go to stdout, as in a service: send
 * them to /dev/null. Prints one JSON line on stderr: { platformUs,
 * plainUs, addedUs } per request, medians over the rounds. The outbound
 * half of a hop is outbound-cost.ts.
 */
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { createClient, type ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import { Counter } from "@platform/test-support";
import { createEdge } from "../../packages/runtime/src/edge/edge.js";
import { serve } from "../../packages/runtime/src/server/serve.js";
import { loadConfig } from "../../services/gateway/src/config.js";
import { alternatingRounds, cpuPerCall } from "./alternating-rounds.js";

const requests = Number(process.argv[2] ?? 5_000);
const concurrency = Number(process.argv[3] ?? 8);
const rounds = Number(process.argv[4] ?? 6);
if (![requests, concurrency, rounds].every((n) => Number.isInteger(n) && n > 0)) {
  throw new Error("usage: hop-cost.ts [requests per round] [concurrency] [rounds]");
}

type GetClient = { get(req: object): Promise<unknown> };

// HOLD_MS=n: each request is answered n ms later, so that about `concurrency` requests are in flight at
// once, as at a hop of the chain under load (costs that grow with the requests in flight show).
const holdMs = Number(process.env.HOLD_MS ?? 0);
const get = holdMs > 0 ? () => new Promise((resolve) => setTimeout(() => resolve({}), holdMs)) : () => ({});
const routes = (router: ConnectRouter) => router.service(Counter, { get, async *count() {} } as never);

const config = loadConfig({ PORT: "0", ADMIN_PORT: "0" });
const platformServer = await serve({
  config: config.server,
  services: [Counter],
  routes,
  http1: true,
  edge: createEdge({ ...config.edge, intake: config.intake, criticality: () => "sheddable" }),
});
await platformServer.ready;

const plainServer = http2.createServer(connectNodeAdapter({ routes }));
await new Promise<void>((resolve) => plainServer.listen(0, "127.0.0.1", resolve));
const plainPort = (plainServer.address() as AddressInfo).port;

const clientOf = (port: number) => createClient(Counter, createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}` })) as unknown as GetClient;
const platform = clientOf(platformServer.port);
const plain = clientOf(plainPort);

function run(client: GetClient, n: number): Promise<number> {
  return cpuPerCall(n, concurrency, () => client.get({}));
}

const result = await alternatingRounds((side, n) => run(side === "platform" ? platform : plain, n), { n: requests, warmupN: Math.min(2000, requests), rounds });
process.stderr.write(`${JSON.stringify(result)}\n`);
process.exit(0);
