import type { DescService } from "@bufbuild/protobuf";
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { RetryBudget, systemClock, type RetryPolicy } from "@platform/resilience";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { outboundInterceptor } from "./outbound-interceptor.js";
import { retryInterceptor } from "./retry-interceptor.js";
import type { DeadlineConfig } from "./server-config.js";

export interface DependencyClientOptions {
  /** Name in messages and metrics, e.g. "pricing". */
  dependency: string;
  /** e.g. http://pricing:8083 (h2c). */
  baseUrl: string;
  deadline: Pick<DeadlineConfig, "hopReserveMs" | "minBudgetMs">;
  /**
   * Required, so that every client states it: `"none"` (exactly one
   * attempt per call) everywhere but at the edge. Only the gateway passes a
   * policy and budget: one layer retries, everything below it fails fast.
   */
  retry: "none" | { policy: RetryPolicy; budget: { percentCanRetry: number; minRetriesPerSec: number; ttlMs: number } };
  /** Extra interceptors, outermost first, inside the retry loop. */
  interceptors?: Interceptor[];
}

/**
 * A client for a downstream service over gRPC on h2c, with deadline
 * propagation, request-id forwarding, error mapping and metrics built in.
 * Every service calls its dependencies through this, so a new service gets
 * the same behaviour by construction.
 */
export function createDependencyClient<T extends DescService>(service: T, opts: DependencyClientOptions): Client<T> {
  const transport = createGrpcTransport({
    baseUrl: opts.baseUrl,
    interceptors: [
      ...retryLayer(opts),
      ...(opts.interceptors ?? []),
      outboundInterceptor({ dependency: opts.dependency, ...opts.deadline }),
    ],
  });
  return createClient(service, transport);
}

function retryLayer(opts: DependencyClientOptions): Interceptor[] {
  if (opts.retry === "none" || opts.retry.policy.maxAttempts <= 1) return [];
  const { policy, budget } = opts.retry;
  return [retryInterceptor({ dependency: opts.dependency, policy, budget: new RetryBudget({ ...budget, clock: systemClock }) })];
}
