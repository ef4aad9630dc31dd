import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { exampleEchoV1 } from "@platform/proto";

/** Longest message Echo accepts: bounds the work one request can ask for. */
export const maxMessageLength = 256;

/**
 * The example-echo service's API. Deadlines, admission, health, metrics and
 * logs come from serve(); this class holds only what the service does.
 */
export class ExampleEchoService implements ServiceImpl<typeof exampleEchoV1.ExampleEchoService> {
  async echo(req: exampleEchoV1.EchoRequest): Promise<exampleEchoV1.EchoResponse> {
    if (req.message === "") throw new ConnectError("message must not be empty", Code.InvalidArgument);
    if (req.message.length > maxMessageLength) {
      throw new ConnectError(`message must be at most ${maxMessageLength} characters, got ${req.message.length}`, Code.InvalidArgument);
    }
    return create(exampleEchoV1.EchoResponseSchema, { message: req.message });
  }
}
