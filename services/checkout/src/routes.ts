import type { ConnectRouter } from "@connectrpc/connect";
import { checkoutV1 } from "@platform/proto";
import type { CheckoutService } from "./checkout-service.js";

export const services = [checkoutV1.CheckoutService];

export function routes(impl: CheckoutService) {
  return (router: ConnectRouter) => {
    router.service(checkoutV1.CheckoutService, impl);
  };
}
