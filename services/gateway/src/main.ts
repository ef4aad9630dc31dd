import { MethodOptions_IdempotencyLevel as IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import { checkoutV1 } from "@platform/proto";
import { apiRoutes, createDependencyClient, createEdge, createLogger, forwardService, runMain, serve, type ServiceRoute } from "@platform/runtime";
import { defaults, loadConfig } from "./config.js";
import { GatewayService } from "./gateway-service.js";
import { callDepths } from "./forwarded-apis.generated.js";
import { forwardedIdempotencyHeaders } from "./idempotency-key.js";

runMain("gateway", async () => {
  const config = loadConfig(process.env);
  const logger = createLogger(defaults.name, config.server.logLevel);
  const clientOptions = { server: config.server, retry: config.retry };
  // Each retry needs a hop reserve for every service below it (callDepths, from the registry).
  const checkout = createDependencyClient(checkoutV1.CheckoutService, {
    ...clientOptions,
    dependency: config.checkout,
    callDepth: callDepths[config.checkout.name],
  });
  const forwarded: ServiceRoute[] = config.forwarded.map(({ api, dependency }) => ({
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
    // checkout.v1 answered here, then every forwarded api.
    ...apiRoutes(defaults.apis, new GatewayService(checkout, config.server.streams.heartbeatMs), forwarded),
    http1: true,
    logger,
    // The public edge: CORS, API keys or JWTs, rate limit per client, quota per tenant, criticality per method, intake control.
    edge: createEdge({
      ...config.edge,
      intake: config.intake,
      criticality: (procedure) => (critical.has(procedure) ? "critical" : "sheddable"),
      onKeyLoadFailure: (e) => logger.warn({ err: e.message }, "JWKS not loaded; the keys cached so far stay in use"),
    }),
  });
});
