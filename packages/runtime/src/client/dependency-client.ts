import type { DescService } from "@bufbuild/protobuf";
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { healthV1 } from "@platform/proto";
import { RetryBudget, minAttemptMs, runOutsideScope, systemClock, type RetryPolicy } from "@platform/resilience";
import type { DependencyConfig } from "./dependency-config.js";
import { createBalancedTransport } from "./balancer/balanced-transport.js";
import { type DependencyHealth, isolationInterceptor } from "./isolation-interceptor.js";
import { waitingForRestartHeader } from "./restart-signal.js";
import { budgetGateInterceptor, outboundInterceptor } from "./outbound-interceptor.js";
import { retryInterceptor } from "./retry-interceptor.js";
import { hedgeInterceptor } from "./hedge/hedge-interceptor.js";
import { dependencyTls } from "./dependency-tls.js";
import type { ServerConfig } from "../config/server-config.js";
import { rememberDependencyClient } from "../config/loaded-config.js";
import { pluginsWith, type ClientComposition, type PlatformPlugin } from "../config/plugin.js";

export interface DependencyClientOptions {
  dependency: DependencyConfig;
  /** This service's settings: the deadline reserve and minimum budget. */
  server: ServerConfig;
  /**
   * Required, so that every client states it: `"none"` (exactly one
   * attempt per call) everywhere but at the edge. Only the gateway passes a
   * policy and budget: one layer retries, everything below it fails fast.
   */
  retry:
    | "none"
    | {
        policy: RetryPolicy;
        budget: { percentCanRetry: number; minRetriesPerSec: number; ttlMs: number };
        /** Hedge reads still unanswered after this quantile of their recent latency (hedge/), from the same budget; absent: no hedging. */
        hedge?: { quantile: number };
      };
  /**
   * How many services the longest chain of calls starting at this
   * dependency crosses, the dependency itself included (the registry's
   * `callDepth`; default 1). The retry layer starts no attempt with less
   * than a hop reserve per service crossed plus the minimum budget left: a
   * hop further down would refuse it, and the caller would hear
   * DEADLINE_EXCEEDED instead of the failure that was retried.
   */
  callDepth?: number;
  /** Plug-ins for this client, after those installed in the process (plugin.ts). */
  plugins?: PlatformPlugin[];
}

/**
 * A client for a downstream service over gRPC on h2c. Every call goes
 * through, outermost first: the retry loop (the gateway only), the
 * minimum-budget check, the dependency's circuit breaker and bulkhead, then deadline propagation,
 * request-id forwarding, error mapping and metrics; last, each attempt goes
 * to one of the dependency's replicas (balancer/), over that replica's
 * connection, checked with HTTP/2 PING (dependency-config.ts `KeepaliveConfig`). Every service calls its
 * dependencies through this, so a new service gets the same behaviour by
 * construction.
 */
export function createDependencyClient<T extends DescService>(service: T, opts: DependencyClientOptions): Client<T> {
  const { name } = opts.dependency;
  const { deadline } = opts.server;
  const plugins = pluginsWith(opts.plugins);
  rememberDependencyClient({ dependency: name, baseUrl: opts.dependency.baseUrl, plugins: plugins.map((p) => p.name), retry: opts.retry });
  const propagation = { dependency: name, hopReserveMs: deadline.hopReserveMs, minBudgetMs: deadline.minBudgetMs };
  const { keepalive } = opts.dependency;
  // The dependency's health (the breakers' probe, the bulkheads' stall
  // classifier), over the transport's own connection once it exists.
  let health: Client<typeof healthV1.Health> | undefined;
  // A request starts these (its call opened a breaker, or found a stall), but
  // they are not its calls: outside its scope, they carry none of its
  // deadline, request id or cancellation.
  const dependencyHealth: DependencyHealth = {
    serving: () =>
      runOutsideScope(
        async () =>
          (await health!.check({ service: service.typeName }, { timeoutMs: HEALTH_TIMEOUT_MS })).status === healthV1.HealthCheckResponse_ServingStatus.SERVING,
      ),
    // The whole server's entry: answered at once, without checking the dependency's own resources.
    waitingFor: () =>
      runOutsideScope(async () => {
        let waitingFor: string | undefined;
        await health!.check({ service: "" }, { timeoutMs: HEALTH_TIMEOUT_MS, onHeader: (h) => (waitingFor = h.get(waitingForRestartHeader) ?? undefined) });
        return waitingFor;
      }),
  };
  let composition: ClientComposition = {
    interceptors: [
      ...retryLayer(name, opts.retry, minAttemptMs(deadline, opts.callDepth ?? 1)),
      budgetGateInterceptor(propagation),
      isolationInterceptor(name, opts.dependency.isolation, minAttemptMs(deadline), undefined, dependencyHealth),
      outboundInterceptor(propagation),
    ],
    keepalive: keepalive.pingIntervalMs > 0 ? keepalive : undefined,
  };
  for (const plugin of plugins) {
    if (plugin.dependencyClient) composition = plugin.dependencyClient(composition, { dependency: opts.dependency, server: opts.server });
  }
  const ping = composition.keepalive;
  const { balancing } = opts.dependency;
  const { transport } = createBalancedTransport({
    dependency: name,
    baseUrl: opts.dependency.baseUrl,
    ...(balancing.addresses ? { addresses: balancing.addresses } : {}),
    resolveIntervalMs: balancing.resolveIntervalMs,
    outlierDetection: balancing.outlierDetection,
    mode: balancing.mode,
    ...(ping ? { ping: { pingIntervalMs: ping.pingIntervalMs, pingTimeoutMs: ping.pingTimeoutMs, pingIdleConnection: ping.pingIdleConnection } } : {}),
    interceptors: composition.interceptors,
    ...dependencyTls(opts.server.tls, opts.dependency.baseUrl),
  });
  health = createClient(healthV1.Health, transport);
  return createClient(service, transport);
}

/**
 * A health check gives up after this. A probe's unanswered check says the
 * dependency is not back; a stall classifier's keeps the last verdict (a
 * dependency busy with a failover's backlog may answer late).
 */
const HEALTH_TIMEOUT_MS = 500;

function retryLayer(dependency: string, retry: DependencyClientOptions["retry"], attemptFloorMs: number): Interceptor[] {
  if (retry === "none" || retry.policy.maxAttempts <= 1) return [];
  const { policy, hedge } = retry;
  const budget = new RetryBudget({ ...retry.budget, clock: systemClock });
  return [
    retryInterceptor({ dependency, policy, budget, minAttemptMs: attemptFloorMs }),
    ...(hedge ? [hedgeInterceptor({ dependency, budget, quantile: hedge.quantile })] : []),
  ];
}
