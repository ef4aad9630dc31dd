/**
 * CPU time per request of the whole gateway hop, in one process: the
 * gateway as services/gateway/src/main.ts puts it together (serve() with
 * its configuration and edge, GatewayService over createDependencyClient
 * toward checkout: retry loop, budget gate, breaker, bulkhead, deadline
 * propagation, metrics) against a plain gateway (`connectNodeAdapter` on
 * `http2.createServer`, a plain `createGrpcTransport` client toward
 * checkout), both forwarding to the same stub checkout (plain Connect,
 * answering at once). One gRPC client per gateway sends the load; rounds
 * alternate between the two, so whatever else the machine does falls on
 * both, and the difference of the process's CPU time (user + system) per
 * request is what the platform's gateway adds, server and outbound halves
 * together (the client and the stub do the same work on both sides).
 *
 *   node --import tsx lab/profile/gateway-hop-cost.ts [requests per round] [concurrency] [rounds] [method] > /dev/null
 *
 * method: listProducts (default), placeOrder or getOrder. SPLIT=1 adds a
 * third variant, serve() and the edge with a plain client toward checkout,
 * and prints the added cost split into its server and outbound halves. For a profile of
 * one side alone, add ONLY=platform or ONLY=plain (a warm-up round,
 * then `rounds` rounds of that side) and run under `node --cpu-prof`. The gateway's request log lines go to stdout: send
 * them to /dev/null. Prints one JSON line on stderr: { platformUs,
 * plainUs, addedUs } per request, medians over the rounds.
 */
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { createClient, type ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import { checkoutV1 } from "@platform/proto";
import { apiRoutes } from "@platform/runtime";
import { createDependencyClient } from "../../packages/runtime/src/client/dependency-client.js";
import { createEdge } from "../../packages/runtime/src/edge/edge.js";
import { serve } from "../../packages/runtime/src/server/serve.js";
import { defaults as gatewayDefaults, loadConfig } from "../../services/gateway/src/config.js";
import { GatewayService } from "../../services/gateway/src/gateway-service.js";
import { median } from "../stats.js";
import { alternatingRounds, alternatingVariants, cpuPerCall, medianDifference } from "./alternating-rounds.js";

const requests = Number(process.argv[2] ?? 3_000);
const concurrency = Number(process.argv[3] ?? 8);
const rounds = Number(process.argv[4] ?? 5);
const method = (process.argv[5] ?? "listProducts") as "listProducts" | "placeOrder" | "getOrder";
if (![requests, concurrency, rounds].every((n) => Number.isInteger(n) && n > 0) || !["listProducts", "placeOrder", "getOrder"].includes(method)) {
  throw new Error("usage: gateway-hop-cost.ts [requests per round] [concurrency] [rounds] [listProducts|placeOrder|getOrder]");
}

type CheckoutClient = ReturnType<typeof createClient<typeof checkoutV1.CheckoutService>>;

async function listenPlain(routes: (router: ConnectRouter) => void): Promise<{ server: http2.Http2Server; port: number }> {
  const server = http2.createServer(connectNodeAdapter({ routes }));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

// The stub checkout: the gateway's work only, nothing behind it.
const stub = await listenPlain((router) =>
  router.service(checkoutV1.CheckoutService, {
    listProducts: () => ({ products: [{ sku: "sku-1", name: "one", unitPrice: { currencyCode: "EUR", amountMinor: 100n } }] }),
    placeOrder: () => ({ order: { id: "order-1" } }),
    getOrder: () => ({ order: { id: "order-1" } }),
  }),
);
const checkoutUrl = `http://127.0.0.1:${stub.port}`;

const config = loadConfig({ PORT: "0", ADMIN_PORT: "0", CHECKOUT_URL: checkoutUrl }, []);
const checkout = createDependencyClient(checkoutV1.CheckoutService, { server: config.server, retry: config.retry, dependency: config.checkout });
const platformServer = await serve({
  config: config.server,
  services: [checkoutV1.CheckoutService],
  routes: apiRoutes(gatewayDefaults.apis, new GatewayService(checkout)).routes,
  http1: true,
  edge: createEdge({ ...config.edge, intake: config.intake, criticality: (p) => (p.endsWith("/PlaceOrder") ? "critical" : "sheddable") }),
});
await platformServer.ready;

// serve() and the edge with a plain client toward checkout: splits the hop's
// added cost into its server half and its outbound half (SPLIT=1).
const plainOutbound = createClient(checkoutV1.CheckoutService, createGrpcTransport({ baseUrl: checkoutUrl }));
const serverOnly =
  process.env.SPLIT === "1"
    ? await serve({
        config: config.server,
        services: [checkoutV1.CheckoutService],
        routes: apiRoutes(gatewayDefaults.apis, new GatewayService(plainOutbound)).routes,
        http1: true,
        edge: createEdge({ ...config.edge, intake: config.intake, criticality: (p) => (p.endsWith("/PlaceOrder") ? "critical" : "sheddable") }),
      })
    : undefined;
await serverOnly?.ready;

const plainCheckout = createClient(checkoutV1.CheckoutService, createGrpcTransport({ baseUrl: checkoutUrl }));
const plain = await listenPlain((router) =>
  router.service(checkoutV1.CheckoutService, {
    listProducts: (req) => plainCheckout.listProducts(req),
    placeOrder: (req, ctx) =>
      plainCheckout.placeOrder(req, { headers: { "idempotency-key": ctx.requestHeader.get("idempotency-key") || crypto.randomUUID() } }),
    getOrder: (req) => plainCheckout.getOrder(req),
  }),
);

const clientOf = (port: number): CheckoutClient => createClient(checkoutV1.CheckoutService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}` }));
const platformClient = clientOf(platformServer.port);
const plainClient = clientOf(plain.port);
const request = {
  listProducts: {},
  placeOrder: { customerId: "c-1", items: [{ sku: "sku-1", quantity: 1 }] },
  getOrder: { orderId: "order-1" },
}[method];

function run(client: CheckoutClient, n: number): Promise<number> {
  const call = client[method] as (req: object) => Promise<unknown>;
  return cpuPerCall(n, concurrency, () => call(request));
}

const only = process.env.ONLY;
if (only === "platform" || only === "plain") {
  const us = [];
  for (let i = 0; i < rounds + 1; i++) us.push(Math.round(await run(only === "platform" ? platformClient : plainClient, requests)));
  process.stderr.write(`${JSON.stringify({ [`${only}Us`]: us.slice(1) })}\n`);
} else if (serverOnly) {
  const serverOnlyClient = clientOf(serverOnly.port);
  const clients = { platform: platformClient, serverOnly: serverOnlyClient, plain: plainClient };
  const us = await alternatingVariants(["platform", "serverOnly", "plain"] as const, (v, n) => run(clients[v], n), {
    n: requests,
    warmupN: Math.min(2000, requests),
    rounds,
  });
  process.stderr.write(
    `${JSON.stringify({
      platformUs: Math.round(median(us.platform)),
      serverOnlyUs: Math.round(median(us.serverOnly)),
      plainUs: Math.round(median(us.plain)),
      serverHalfUs: Math.round(medianDifference(us.serverOnly, us.plain)),
      outboundHalfUs: Math.round(medianDifference(us.platform, us.serverOnly)),
    })}\n`,
  );
} else {
  const result = await alternatingRounds((side, n) => run(side === "platform" ? platformClient : plainClient, n), {
    n: requests,
    warmupN: Math.min(2000, requests),
    rounds,
  });
  process.stderr.write(`${JSON.stringify(result)}\n`);
}
process.exit(0);
