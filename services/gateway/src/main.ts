import { MethodOptions_IdempotencyLevel as IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import { checkoutV1 } from "@platform/proto";
import { createDependencyClient, createEdge, forwardService, runMain, serve } from "@platform/runtime";
import { loadConfig } from "./config.js";
import { GatewayService } from "./gateway-service.js";
import { callDepths } from "./forwarded-apis.generated.js";
import { forwardedIdempotencyHeaders } from "./idempotency-key.js";
import { routes, services, type ForwardedRoute } from "./routes.js";

runMain("gateway", async () => {
  const config = loadConfig(process.env);
  const clientOptions = { server: config.server, retry: config.retry };
  // Each retry needs a hop reserve for every service below it (callDepths, from the registry).
  const checkout = createDependencyClient(checkoutV1.CheckoutService, {
    ...clientOptions,
    dependency: config.checkout,
    callDepth: callDepths[config.checkout.name],
  });
  const forwarded: ForwardedRoute[] = config.forwarded.map(({ api, dependency }) => ({
    service: api.service,
    impl: forwardService(
      api.service,
      createDependencyClient(api.service, { ...clientOptions, dependency, callDepth: callDepths[dependency.name] }),
      (method, ctx) => ({
        headers: forwardedIdempotencyHeaders(method, ctx.requestHeader),
      }),
    ),
  }));
  // Under pressure, browsing goes before buying: writes (PlaceOrder, and any
  // forwarded method with side effects) are critical, reads sheddable. A
  // client cannot choose.
  const critical = new Set([
    `/${checkoutV1.CheckoutService.typeName}/PlaceOrder`,
    ...config.forwarded.flatMap(({ api }) =>
      api.service.methods.filter((m) => m.idempotency !== IdempotencyLevel.NO_SIDE_EFFECTS).map((m) => `/${api.service.typeName}/${m.name}`),
    ),
  ]);
  return serve({
    config: config.server,
    services: services(forwarded),
    routes: routes(new GatewayService(checkout), forwarded),
    http1: true,
    // The public edge: CORS, API keys, rate limit per client, criticality per method, intake control.
    edge: createEdge({ ...config.edge, intake: config.intake, criticality: (procedure) => (critical.has(procedure) ? "critical" : "sheddable") }),
  });
});
