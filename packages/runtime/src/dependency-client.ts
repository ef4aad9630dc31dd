import type { DescService } from "@bufbuild/protobuf";
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { outboundInterceptor } from "./outbound-interceptor.js";
import type { DeadlineConfig } from "./server-config.js";

export interface DependencyClientOptions {
  /** Name in messages and metrics, e.g. "pricing". */
  dependency: string;
  /** e.g. http://pricing:8083 (h2c). */
  baseUrl: string;
  deadline: Pick<DeadlineConfig, "hopReserveMs" | "minBudgetMs">;
  /**
   * Interceptors that wrap every call, outermost first: the gateway passes
   * its retry interceptor here. Inner services pass none: below the edge a
   * call is attempted exactly once.
   */
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
      ...(opts.interceptors ?? []),
      outboundInterceptor({ dependency: opts.dependency, ...opts.deadline }),
    ],
  });
  return createClient(service, transport);
}
