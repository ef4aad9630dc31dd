import type { ConnectRouter } from "@connectrpc/connect";
import { exampleNotesV1 } from "@platform/proto";
import type { ExampleNotesService } from "./example-notes-service.js";

export const services = [exampleNotesV1.ExampleNotesService];

export function routes(impl: ExampleNotesService) {
  return (router: ConnectRouter) => {
    router.service(exampleNotesV1.ExampleNotesService, impl);
  };
}
