import type { ConnectRouter } from "@connectrpc/connect";
import { ordersV1 } from "@platform/proto";
import type { OrdersService } from "./orders-service.js";

export const services = [ordersV1.OrdersService];

export function routes(impl: OrdersService) {
  return (router: ConnectRouter) => {
    router.service(ordersV1.OrdersService, impl);
  };
}
