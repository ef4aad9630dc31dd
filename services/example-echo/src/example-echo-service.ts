import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { exampleEchoV1 } from "@platform/proto";

/** Longest message Echo accepts, declared in example_echo.proto. */
export const maxMessageLength = 256;

/**
 * The example-echo service's API. Deadlines, admission, health, metrics and
 * logs come from serve(), which checks the request's rules
 * (example_echo.proto) before a handler runs; this class holds only what
 * the service does.
 */
export class ExampleEchoService implements ServiceImpl<typeof exampleEchoV1.ExampleEchoService> {
  async echo(req: exampleEchoV1.EchoRequest): Promise<exampleEchoV1.EchoResponse> {
    return create(exampleEchoV1.EchoResponseSchema, { message: req.message });
  }
}
