import type { DescService } from "@bufbuild/protobuf";
import * as proto from "@platform/proto";
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
}

/**
 * The generated service descriptor for a fully-qualified name, searched in
 * @platform/proto's namespaces (one per API package).
 */
export function protoService(typeName: string): DescService {
  for (const namespace of Object.values(proto)) {
    for (const value of Object.values(namespace as Record<string, unknown>)) {
      const d = value as Partial<DescService> | undefined;
      if (d?.kind === "service" && d.typeName === typeName) return d as DescService;
    }
  }
  throw new Error(
    `${typeName}: no generated service of that name in @platform/proto (add its package to packages/proto/src/index.ts and run npm run generate)`,
  );
}

/**
 * Every public service's apis ("public": true in its service.json), from
 * forwarded-apis.generated.ts (npm run generate:services).
 */
export const forwardedApis: readonly ForwardedApi[] = forwardedApiNames.map((f) => ({
  service: protoService(f.api),
  dependency: f.dependency,
  defaultUrl: f.defaultUrl,
}));
