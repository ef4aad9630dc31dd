import type { ConnectRouter } from "@connectrpc/connect";
import { receiptsV1 } from "@platform/proto";
import type { ReceiptsService } from "./receipts-service.js";

export const services = [receiptsV1.ReceiptsService];

export function routes(impl: ReceiptsService) {
  return (router: ConnectRouter) => {
    router.service(receiptsV1.ReceiptsService, impl);
  };
}
