import type { DescService } from "@bufbuild/protobuf";
import { generatedService } from "@platform/runtime";
import { forwardedApiNames } from "./forwarded-apis.generated.js";

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
  /** The bulkhead the gateway's manifest gives it, or the default one when it lists no such dependency. */
  bulkhead: { maxConcurrent: number; minConcurrent: number; maxQueue: number };
}

/**
 * Every public service's apis ("public": true in its service.json), from
 * forwarded-apis.generated.ts (npm run generate:services).
 */
export const forwardedApis: readonly ForwardedApi[] = forwardedApiNames.map((f) => ({
  service: generatedService(f.api),
  dependency: f.dependency,
  defaultUrl: f.defaultUrl,
  bulkhead: f.bulkhead,
}));
