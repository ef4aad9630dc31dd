import type { ConnectRouter } from "@connectrpc/connect";
import { exampleEchoV1 } from "@platform/proto";
import type { ExampleEchoService } from "./example-echo-service.js";

export const services = [exampleEchoV1.ExampleEchoService];

export function routes(impl: ExampleEchoService) {
  return (router: ConnectRouter) => {
    router.service(exampleEchoV1.ExampleEchoService, impl);
  };
}
