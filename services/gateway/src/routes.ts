import type { DescService } from "@bufbuild/protobuf";
import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import { checkoutV1 } from "@platform/proto";
import type { GatewayService } from "./gateway-service.js";

/** A forwarded API with its implementation (forwardService). */
export interface ForwardedRoute {
  service: DescService;
  impl: Partial<ServiceImpl<DescService>>;
}

/** What the gateway serves, for health and routing: checkout's API, then every forwarded one. */
export function services(forwarded: readonly ForwardedRoute[] = []): DescService[] {
  return [checkoutV1.CheckoutService, ...forwarded.map((f) => f.service)];
}

export function routes(impl: GatewayService, forwarded: readonly ForwardedRoute[] = []) {
  return (router: ConnectRouter) => {
    router.service(checkoutV1.CheckoutService, impl);
    for (const f of forwarded) router.service(f.service, f.impl);
  };
}
