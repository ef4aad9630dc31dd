import { ordersV1, pricingV1 } from "@platform/proto";
import { apiRoutes, createDependencyClient, runMain, serve } from "@platform/runtime";
import { CheckoutService } from "./checkout-service.js";
import { defaults, loadConfig } from "./config.js";

runMain("checkout", async () => {
  const config = loadConfig(process.env);
  const impl = new CheckoutService({
    // Below the edge nothing retries: one attempt per call.
    orders: createDependencyClient(ordersV1.OrdersService, { dependency: config.orders, server: config.server, retry: "none" }),
    pricing: createDependencyClient(pricingV1.PricingService, { dependency: config.pricing, server: config.server, retry: "none" }),
  });
  return serve({ config: config.server, ...apiRoutes(defaults.apis, impl) });
});
