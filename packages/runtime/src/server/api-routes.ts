import type { DescService } from "@bufbuild/protobuf";
import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import * as proto from "@platform/proto";

/** A protobuf service with its implementation, as `router.service` takes them. */
export interface ServiceRoute {
  service: DescService;
  impl: Partial<ServiceImpl<DescService>>;
}

/**
 * The generated descriptor of a fully-qualified protobuf service
 * (`orders.v1.OrdersService`), found in @platform/proto's namespaces (one
 * per API package, generated from proto/).
 */
export function generatedService(typeName: string): DescService {
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
 * What `serve()` takes for the apis a service's manifest lists
 * (service.json `apis`): each one's generated descriptor, answered by
 * `impl`, and then `more` routes as given (the gateway's forwarded apis).
 * `impl` must implement every method of every listed api: a manifest that
 * promises an api the code does not answer stops start-up here, naming the
 * missing methods, instead of answering them `unimplemented`.
 */
export function apiRoutes(
  apis: readonly string[],
  impl: object,
  more: readonly ServiceRoute[] = [],
): { services: DescService[]; routes: (router: ConnectRouter) => void } {
  const own = apis.map((api) => generatedService(api));
  for (const service of own) {
    const missing = service.methods.filter((m) => typeof (impl as Record<string, unknown>)[m.localName] !== "function").map((m) => m.localName);
    if (missing.length > 0) {
      throw new Error(`${service.typeName}: ${impl.constructor.name} does not implement ${missing.join(", ")} (service.json lists the api under "apis")`);
    }
  }
  return {
    services: [...own, ...more.map((r) => r.service)],
    routes: (router) => {
      for (const service of own) router.service(service, impl as Partial<ServiceImpl<DescService>>);
      for (const r of more) router.service(r.service, r.impl);
    },
  };
}
