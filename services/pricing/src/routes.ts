import type { ConnectRouter } from "@connectrpc/connect";
import { pricingV1 } from "@platform/proto";
import type { PricingService } from "./pricing-service.js";

export const services = [pricingV1.PricingService];

export function routes(impl: PricingService) {
  return (router: ConnectRouter) => {
    router.service(pricingV1.PricingService, impl);
  };
}
