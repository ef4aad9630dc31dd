import { fileURLToPath } from "node:url";
import { createDatabase, migrateWhenReachable } from "@platform/database";
import { createLogger, databaseProfileOptions, runMain, serve } from "@platform/runtime";
import { loadConfig } from "./config.js";
import { ReceiptsService } from "./receipts-service.js";
import { routes, services } from "./routes.js";

const migrations = fileURLToPath(new URL("../migrations", import.meta.url));

runMain("receipts", async () => {
  const config = loadConfig(process.env);
  const logger = createLogger("receipts", config.server.logLevel);
  const db = createDatabase({
    name: "receipts-db",
    connectionString: config.databaseUrl,
    maxConnections: config.dbPoolMax,
    applicationName: "receipts",
    logger,
    ...databaseProfileOptions(config.server),
  });
  // Serves NOT_SERVING until the database answers and the migrations are in.
  const startup = migrateWhenReachable(db, { schema: "receipts", directory: migrations, budgetMs: config.dbStartupTimeoutMs, logger });
  return serve({
    config: config.server,
    logger,
    services,
    routes: routes(new ReceiptsService(db)),
    startup: { ready: startup.ready, waitingFor: "the database" },
    onShutdown: () => {
      startup.cancel();
      return db.close();
    },
  });
});
