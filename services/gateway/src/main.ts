import { checkoutV1 } from "@platform/proto";
import { createDependencyClient, runMain, serve } from "@platform/runtime";
import { loadConfig } from "./config.js";
import { GatewayService } from "./gateway-service.js";
import { routes, services } from "./routes.js";

runMain("gateway", async () => {
  const config = loadConfig(process.env);
  const checkout = createDependencyClient(checkoutV1.CheckoutService, {
    dependency: config.checkout,
    server: config.server,
    retry: config.retry,
  });
  return serve({
    config: config.server,
    services,
    routes: routes(new GatewayService(checkout)),
    http1: true,
    intake: config.intake,
    edge: config.edge,
    // Under pressure, browsing goes before buying. A client cannot choose.
    criticality: (procedure) => (procedure.endsWith("/PlaceOrder") ? "critical" : "sheddable"),
  });
});
