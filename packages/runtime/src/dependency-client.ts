import type { DescService } from "@bufbuild/protobuf";
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { RetryBudget, systemClock, type RetryPolicy } from "@platform/resilience";
import type { DependencyConfig } from "./dependency-config.js";
import { isolationInterceptor } from "./isolation-interceptor.js";
import { budgetGateInterceptor, outboundInterceptor } from "./outbound-interceptor.js";
import { retryInterceptor } from "./retry-interceptor.js";
import type { ServerConfig } from "./server-config.js";
import { naiveClientInterceptors } from "./naive-interceptors.js";
import { rememberDependencyClient } from "./effective-config.js";

export interface DependencyClientOptions {
  dependency: DependencyConfig;
  /** This service's settings: deadline reserve and minimum, resilience profile. */
  server: Pick<ServerConfig, "deadline" | "profile">;
  /**
   * Required, so that every client states it: `"none"` (exactly one
   * attempt per call) everywhere but at the edge. Only the gateway passes a
   * policy and budget: one layer retries, everything below it fails fast.
   */
  retry: "none" | { policy: RetryPolicy; budget: { percentCanRetry: number; minRetriesPerSec: number; ttlMs: number } };
}

/**
 * A client for a downstream service over gRPC on h2c. Every call goes
 * through, outermost first: the retry loop (the gateway only), the
 * minimum-budget check, the dependency's circuit breaker and bulkhead, then deadline propagation,
 * request-id forwarding, error mapping and metrics; the connection is
 * checked with HTTP/2 PING (dependency-config.ts `KeepaliveConfig`). Every service calls its
 * dependencies through this, so a new service gets the same behaviour by
 * construction.
 */
export function createDependencyClient<T extends DescService>(service: T, opts: DependencyClientOptions): Client<T> {
  const { name } = opts.dependency;
  const { deadline, profile } = opts.server;
  rememberDependencyClient({ dependency: name, baseUrl: opts.dependency.baseUrl, profile: profile.kind, retry: opts.retry });
  const propagation = { dependency: name, hopReserveMs: deadline.hopReserveMs, minBudgetMs: deadline.minBudgetMs };
  const { keepalive } = opts.dependency;
  const transport = createGrpcTransport({
    baseUrl: opts.dependency.baseUrl,
    // The naive profile runs as connect-node does by default: no PING.
    ...(profile.kind === "platform" && keepalive.pingIntervalMs > 0
      ? { pingIntervalMs: keepalive.pingIntervalMs, pingTimeoutMs: keepalive.pingTimeoutMs, pingIdleConnection: keepalive.pingIdleConnection }
      : {}),
    interceptors:
      profile.kind === "naive"
        ? naiveClientInterceptors(name, profile.callTimeoutMs)
        : [
            ...retryLayer(name, opts.retry),
            budgetGateInterceptor(propagation),
            isolationInterceptor(name, opts.dependency.isolation, deadline.hopReserveMs + deadline.minBudgetMs),
            outboundInterceptor(propagation),
          ],
  });
  return createClient(service, transport);
}

function retryLayer(dependency: string, retry: DependencyClientOptions["retry"]): Interceptor[] {
  if (retry === "none" || retry.policy.maxAttempts <= 1) return [];
  const { policy, budget } = retry;
  return [retryInterceptor({ dependency, policy, budget: new RetryBudget({ ...budget, clock: systemClock }) })];
}
