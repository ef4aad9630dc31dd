import type { DescMethod, DescService } from "@bufbuild/protobuf";
import type { CallOptions, Client, HandlerContext, ServiceImpl } from "@connectrpc/connect";

/** Extra call options for one forwarded call: typically headers the edge vouches for (an idempotency key). */
export type ForwardedCallOptions = (method: DescMethod, ctx: HandlerContext) => Pick<CallOptions, "headers">;

/**
 * An implementation of `service` that hands every call, unchanged, to
 * `client`, a client of the same service: how an edge publishes an internal
 * API without writing a handler per method.
 *
 * Nothing is copied from the inbound request on purpose: the deadline,
 * cancellation, request id and trace context travel through the call scope
 * and the client's interceptors (createDependencyClient), like any other
 * downstream call; inbound headers (credentials among them) stay at the
 * edge unless `callOptions` forwards them.
 *
 * Unary methods only: a streaming method needs a handler that decides how
 * a broken stream is resumed, so it is refused here rather than forwarded
 * in a way that cannot be retried.
 */
export function forwardService<T extends DescService>(service: T, client: Client<T>, callOptions?: ForwardedCallOptions): ServiceImpl<T> {
  const streaming = service.methods.filter((m) => m.methodKind !== "unary");
  if (streaming.length > 0) {
    throw new Error(`forwardService(${service.typeName}): only unary methods can be forwarded; write handlers for ${streaming.map((m) => m.name).join(", ")}`);
  }
  const impl: Record<string, (req: unknown, ctx: HandlerContext) => Promise<unknown>> = {};
  const calls = client as unknown as Record<string, (req: unknown, options?: CallOptions) => Promise<unknown>>;
  for (const method of service.methods) {
    const call = calls[method.localName];
    if (call === undefined) throw new Error(`forwardService(${service.typeName}): the client has no method ${method.localName}`);
    impl[method.localName] = (req, ctx) => call(req, callOptions?.(method, ctx));
  }
  return impl as unknown as ServiceImpl<T>;
}
