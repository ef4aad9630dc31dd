import { fileURLToPath } from "node:url";
import { createDatabase, migrate } from "@platform/database";
import { createLogger, databaseProfileOptions, runMain, serve } from "@platform/runtime";
import { loadConfig } from "./config.js";
import { PricingService } from "./pricing-service.js";
import { routes, services } from "./routes.js";

const migrations = fileURLToPath(new URL("../migrations", import.meta.url));

runMain("pricing", async () => {
  const config = loadConfig(process.env);
  const logger = createLogger("pricing", config.server.logLevel);
  const db = createDatabase({
    name: "pricing-db",
    connectionString: config.databaseUrl,
    maxConnections: config.dbPoolMax,
    applicationName: "pricing",
    ...databaseProfileOptions(config.server),
  });
  const { applied } = await migrate(db, { schema: "pricing", directory: migrations });
  if (applied.length > 0) logger.info({ applied }, "migrations applied");
  return serve({
    config: config.server,
    logger,
    services,
    routes: routes(new PricingService(db)),
    onShutdown: () => db.close(),
  });
});
