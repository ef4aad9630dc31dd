/**
 * The outbound half of the gateway's hop, layer by layer, over a real
 * HTTP/2 connection: the gateway (serve() with its configuration and edge)
 * forwarding to a stub checkout (plain Connect, answering at once) through
 * a client toward checkout composed as createDependencyClient composes it,
 * once whole and once without each layer in turn (retry loop, budget gate,
 * isolation, deadline propagation, HTTP/2 keepalive ping), and once with no
 * layer at all. The gateway's handler calls whichever client the round
 * measures; everything else is the same. Rounds alternate between the
 * variants in one process; a layer's price is the median over the rounds of
 * (whole - whole without it), in CPU µs (user + system) per request.
 *
 *   node --import tsx lab/profile/outbound-ablation.ts [requests per round] [concurrency] [rounds] > /dev/null
 *
 * The gateway's request log lines go to stdout: send them to /dev/null.
 * Prints one JSON line on stderr.
 */
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import { checkoutV1 } from "@platform/proto";
import { apiRoutes } from "@platform/runtime";
import { minAttemptMs, RetryBudget, systemClock } from "@platform/resilience";
import { createEdge } from "../../packages/runtime/src/edge/edge.js";
import { isolationInterceptor } from "../../packages/runtime/src/client/isolation-interceptor.js";
import { budgetGateInterceptor, outboundInterceptor } from "../../packages/runtime/src/client/outbound-interceptor.js";
import { retryInterceptor } from "../../packages/runtime/src/client/retry-interceptor.js";
import { serve } from "../../packages/runtime/src/server/serve.js";
import { defaults as gatewayDefaults, loadConfig } from "../../services/gateway/src/config.js";
import { GatewayService } from "../../services/gateway/src/gateway-service.js";
import { median } from "../stats.js";
import { alternatingVariants, cpuPerCall, medianDifference } from "./alternating-rounds.js";

const requests = Number(process.argv[2] ?? 3_000);
const concurrency = Number(process.argv[3] ?? 8);
const rounds = Number(process.argv[4] ?? 5);
if (![requests, concurrency, rounds].every((n) => Number.isInteger(n) && n > 0)) {
  throw new Error("usage: outbound-ablation.ts [requests per round] [concurrency] [rounds]");
}

type CheckoutClient = Client<typeof checkoutV1.CheckoutService>;

const stubServer = http2.createServer(
  connectNodeAdapter({
    routes: (router) =>
      router.service(checkoutV1.CheckoutService, {
        listProducts: () => ({ products: [{ sku: "sku-1", name: "one", unitPrice: { currencyCode: "EUR", amountMinor: 100n } }] }),
        placeOrder: () => ({ order: { id: "order-1" } }),
        getOrder: () => ({ order: { id: "order-1" } }),
      }),
  }),
);
await new Promise<void>((resolve) => stubServer.listen(0, "127.0.0.1", resolve));
const checkoutUrl = `http://127.0.0.1:${(stubServer.address() as AddressInfo).port}`;
const config = loadConfig({ PORT: "0", ADMIN_PORT: "0", CHECKOUT_URL: checkoutUrl }, []);
const { deadline } = config.server;
const dependency = config.checkout;

const layers = ["retry", "budgetGate", "isolation", "outbound", "ping"] as const;
type Layer = (typeof layers)[number];

/** createDependencyClient's composition (dependency-client.ts), without the layers in `without`. */
function clientWithout(without: readonly Layer[]): CheckoutClient {
  const name = dependency.name;
  const propagation = { dependency: name, hopReserveMs: deadline.hopReserveMs, minBudgetMs: deadline.minBudgetMs };
  const interceptors: Interceptor[] = [];
  if (!without.includes("retry")) {
    const budget = new RetryBudget({ ...config.retry.budget, clock: systemClock });
    interceptors.push(retryInterceptor({ dependency: name, policy: config.retry.policy, budget }));
  }
  if (!without.includes("budgetGate")) interceptors.push(budgetGateInterceptor(propagation));
  if (!without.includes("isolation")) interceptors.push(isolationInterceptor(name, dependency.isolation, minAttemptMs(deadline)));
  if (!without.includes("outbound")) interceptors.push(outboundInterceptor(propagation));
  const ping = without.includes("ping") ? undefined : dependency.keepalive;
  return createClient(
    checkoutV1.CheckoutService,
    createGrpcTransport({
      baseUrl: checkoutUrl,
      ...(ping ? { pingIntervalMs: ping.pingIntervalMs, pingTimeoutMs: ping.pingTimeoutMs, pingIdleConnection: ping.pingIdleConnection } : {}),
      interceptors,
    }),
  );
}

const variants = ["whole", ...layers.map((l) => `no ${l}` as const), "no layer"] as const;
type Variant = (typeof variants)[number];
const clients = Object.fromEntries(variants.map((v) => [v, clientWithout(v === "whole" ? [] : v === "no layer" ? layers : [v.slice(3) as Layer])])) as Record<
  Variant,
  CheckoutClient
>;

// The gateway's handler calls the client of the variant being measured.
let current: CheckoutClient = clients.whole;
const switching = {
  listProducts: (req, opts) => current.listProducts(req, opts),
  placeOrder: (req, opts) => current.placeOrder(req, opts),
  getOrder: (req, opts) => current.getOrder(req, opts),
} as CheckoutClient;
const gateway = await serve({
  config: config.server,
  services: [checkoutV1.CheckoutService],
  routes: apiRoutes(gatewayDefaults.apis, new GatewayService(switching)).routes,
  http1: true,
  edge: createEdge({ ...config.edge, intake: config.intake, criticality: () => "sheddable" }),
});
await gateway.ready;
const load = createClient(checkoutV1.CheckoutService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${gateway.port}` }));

const us = await alternatingVariants(
  variants,
  (v, n) => {
    current = clients[v];
    return cpuPerCall(n, concurrency, () => load.listProducts({}));
  },
  { n: requests, warmupN: Math.min(2000, requests), rounds },
);
const result: Record<string, number> = { wholeUs: Math.round(median(us.whole)), noLayerUs: Math.round(median(us["no layer"])) };
result.everyLayer = Math.round(medianDifference(us.whole, us["no layer"]));
for (const l of layers) result[l] = Math.round(medianDifference(us.whole, us[`no ${l}`]));
process.stderr.write(`${JSON.stringify(result)}\n`);
process.exit(0);
