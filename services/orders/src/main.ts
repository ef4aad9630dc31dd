import { fileURLToPath } from "node:url";
import { createDatabase, migrate } from "@platform/database";
import { pricingV1 } from "@platform/proto";
import { createDependencyClient, createLogger, databaseProfileOptions, runMain, serve } from "@platform/runtime";
import { loadConfig } from "./config.js";
import { OrderStore } from "./order-store.js";
import { OrdersService } from "./orders-service.js";
import { routes, services } from "./routes.js";

const migrations = fileURLToPath(new URL("../migrations", import.meta.url));

runMain("orders", async () => {
  const config = loadConfig(process.env);
  const logger = createLogger("orders", config.server.logLevel);
  const db = createDatabase({
    name: "orders-db",
    connectionString: config.databaseUrl,
    maxConnections: config.dbPoolMax,
    applicationName: "orders",
    ...databaseProfileOptions(config.server),
  });
  const { applied } = await migrate(db, { schema: "orders", directory: migrations });
  if (applied.length > 0) logger.info({ applied }, "migrations applied");
  const pricing = createDependencyClient(pricingV1.PricingService, {
    dependency: config.pricing,
    server: config.server,
    // Below the edge nothing retries: one attempt per call.
    retry: "none",
  });
  const impl = new OrdersService({ store: new OrderStore(db), pricing, idempotencyRetentionHours: config.idempotencyRetentionHours });
  return serve({ config: config.server, logger, services, routes: routes(impl), onShutdown: () => db.close() });
});
