/**
 * CPU time per call of a dependency client's transport, in process: the
 * balanced transport every dependency client uses (one HTTP/2 connection per
 * replica, each call sent to the replica the balancer picks:
 * client/balancer/balanced-transport.ts, with no other interceptor) against
 * connect-node's createGrpcTransport, both over h2c to the same plain
 * connectNodeAdapter server in this process, answering test.v1.Counter's Get
 * with nothing. The cost is this process's user+system CPU time per call
 * (client and server together; the server's share is the same for both),
 * in rounds that alternate between the two transports.
 *
 *   node --import tsx lab/profile/transport-cost.ts [calls per round] [concurrency] [rounds]
 *
 * Prints one JSON line: { balancedUs, plainUs, addedUs } per call, medians
 * over the rounds, and each round's pair.
 */
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { createClient } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import { Counter } from "@platform/test-support";
import { createBalancedTransport } from "../../packages/runtime/src/client/balancer/balanced-transport.js";
import { defaultOutlierDetection } from "../../packages/runtime/src/client/balancer/outlier-detector.js";
import { median } from "../stats.js";
import { alternatingVariants, cpuPerCall, medianDifference } from "./alternating-rounds.js";

const calls = Number(process.argv[2] ?? 8_000);
const concurrency = Number(process.argv[3] ?? 32);
const rounds = Number(process.argv[4] ?? 7);
if (![calls, concurrency, rounds].every((n) => Number.isInteger(n) && n > 0)) {
  throw new Error("usage: transport-cost.ts [calls per round] [concurrency] [rounds]");
}

const server = http2.createServer(connectNodeAdapter({ routes: (r) => r.service(Counter, { get: () => ({}), async *count() {} } as never) }));
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

type Get = (req: object) => Promise<unknown>;
const { transport } = createBalancedTransport({
  dependency: "counter",
  baseUrl,
  addresses: [baseUrl],
  resolveIntervalMs: 30_000,
  outlierDetection: defaultOutlierDetection,
  interceptors: [],
});
const clients: Record<"balanced" | "plain", Get> = {
  balanced: (createClient(Counter, transport) as unknown as { get: Get }).get,
  plain: (createClient(Counter, createGrpcTransport({ baseUrl })) as unknown as { get: Get }).get,
};

const byVariant = await alternatingVariants(["balanced", "plain"] as const, (v, n) => cpuPerCall(n, concurrency, () => clients[v]({})), {
  n: calls,
  warmupN: Math.max(1_000, calls / 2),
  rounds,
});
console.log(
  JSON.stringify({
    balancedUs: Math.round(median(byVariant.balanced)),
    plainUs: Math.round(median(byVariant.plain)),
    addedUs: Math.round(medianDifference(byVariant.balanced, byVariant.plain)),
    rounds: byVariant.balanced.map((b, i) => [Math.round(b), Math.round(byVariant.plain[i]!)]),
  }),
);
server.close();
process.exit(0);
