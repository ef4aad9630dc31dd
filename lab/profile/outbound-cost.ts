/**
 * CPU time per call of the outbound chain a dependency client runs, in
 * process: the gateway's client toward checkout (retry loop, budget gate,
 * breaker and bulkhead, deadline propagation and metrics; the gateway's own
 * default configuration) against the same call with no interceptors, over
 * connect's in-memory router transport to a handler that does nothing.
 * Each call runs inside a call scope, as a request's calls do. Rounds
 * alternate between the two clients in one process, so whatever else the
 * machine does falls on both; the cost is user+system CPU time
 * (process.cpuUsage), which a loaded machine inflates far less than wall
 * time.
 *
 *   node --import tsx lab/profile/outbound-cost.ts [calls per round] [concurrency] [rounds]
 *
 * Prints one JSON line: { platformUs, plainUs, addedUs } per call, medians
 * over the rounds. Comparing two commits: run this file in each tree
 * alternately (docs/performance.md).
 */
import { createClient, createRouterTransport, type Interceptor } from "@connectrpc/connect";
import { createScope, minAttemptMs, RetryBudget, runInScope, systemClock } from "@platform/resilience";
import { Counter } from "@platform/test-support";
import { isolationInterceptor } from "../../packages/runtime/src/client/isolation-interceptor.js";
import { budgetGateInterceptor, outboundInterceptor } from "../../packages/runtime/src/client/outbound-interceptor.js";
import { retryInterceptor } from "../../packages/runtime/src/client/retry-interceptor.js";
import { loadConfig } from "../../services/gateway/src/config.js";
import { alternatingRounds, cpuPerCall } from "./alternating-rounds.js";

const calls = Number(process.argv[2] ?? 20_000);
const concurrency = Number(process.argv[3] ?? 8);
const rounds = Number(process.argv[4] ?? 6);
if (![calls, concurrency, rounds].every((n) => Number.isInteger(n) && n > 0)) {
  throw new Error("usage: outbound-cost.ts [calls per round] [concurrency] [rounds]");
}

const config = loadConfig({});
const { deadline } = config.server;
const propagation = { dependency: "checkout", hopReserveMs: deadline.hopReserveMs, minBudgetMs: deadline.minBudgetMs };
// The chain createDependencyClient builds for the gateway (dependency-client.ts).
const platformChain: Interceptor[] = [
  retryInterceptor({
    dependency: "checkout",
    policy: config.retry.policy,
    budget: new RetryBudget({ ...config.retry.budget, clock: systemClock }),
  }),
  budgetGateInterceptor(propagation),
  isolationInterceptor("checkout", config.checkout.isolation, minAttemptMs(deadline)),
  outboundInterceptor(propagation),
];

type Get = (req: object) => Promise<unknown>;
function clientWith(interceptors: Interceptor[]): Get {
  const transport = createRouterTransport((router) => router.service(Counter, { get: () => ({}), async *count() {} } as never), {
    transport: { interceptors },
  });
  const client = createClient(Counter, transport) as unknown as { get: Get };
  return (req) => client.get(req);
}
const platform = clientWith(platformChain);
const plain = clientWith([]);

function run(get: Get, n: number): Promise<number> {
  return cpuPerCall(n, concurrency, async (i) => {
    const scope = createScope({ timeoutMs: 2000, requestId: `cost-${i}`, procedure: "/cost/Get" });
    try {
      await runInScope(scope, () => get({}));
    } finally {
      scope.dispose();
    }
  });
}

const result = await alternatingRounds((side, n) => run(side === "platform" ? platform : plain, n), { n: calls, warmupN: Math.min(5000, calls), rounds });
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
