import type { DescService } from "@bufbuild/protobuf";

/**
 * An internal API the gateway publishes unchanged, next to
 * checkout.v1.CheckoutService: every method is forwarded to the service at
 * `<DEPENDENCY>_URL` through a dependency client with the edge's retry
 * policy, its own bulkhead and breaker (`<DEPENDENCY>_MAX_CONCURRENT`, ...),
 * under the edge's deadline, admission, auth and rate limit.
 */
export interface ForwardedApi {
  service: DescService;
  /** Names the dependency in metrics and its settings' prefix (`inventory` -> INVENTORY_URL). */
  dependency: string;
  /** Where the service listens when nothing is configured (`npm start`'s port). */
  defaultUrl: string;
}

/**
 * `npm run new-service -- NAME --public` adds a line here (and the
 * service's URL to the gateway in docker-compose.yml and the Kubernetes
 * manifests); docs/adding-a-service.md shows it by hand.
 */
export const forwardedApis: readonly ForwardedApi[] = [
];
