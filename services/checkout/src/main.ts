import { ordersV1, pricingV1 } from "@platform/proto";
import { createDependencyClient, runMain, serve } from "@platform/runtime";
import { CheckoutService } from "./checkout-service.js";
import { loadConfig } from "./config.js";
import { routes, services } from "./routes.js";

runMain("checkout", async () => {
  const config = loadConfig(process.env);
  const impl = new CheckoutService({
    // Below the edge nothing retries: one attempt per call.
    orders: createDependencyClient(ordersV1.OrdersService, { dependency: config.orders, server: config.server, retry: "none" }),
    pricing: createDependencyClient(pricingV1.PricingService, { dependency: config.pricing, server: config.server, retry: "none" }),
  });
  return serve({ config: config.server, services, routes: routes(impl) });
});
