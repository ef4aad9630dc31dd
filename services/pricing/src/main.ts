import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { createDatabase, databaseResources, migrateWhenReachable } from "@platform/database";
import { createLogger, databaseDeadlineOptions, runMain, serve } from "@platform/runtime";
import { loadConfig } from "./config.js";
import { PricingService } from "./pricing-service.js";
import { routes, services } from "./routes.js";

const migrations = fileURLToPath(new URL("../migrations", import.meta.url));
const demoCatalogue = fileURLToPath(new URL("../seed/demo-catalogue.sql", import.meta.url));

runMain("pricing", async () => {
  const config = loadConfig(process.env);
  const logger = createLogger("pricing", config.server.logLevel);
  const db = createDatabase({
    name: "pricing-db",
    connectionString: config.databaseUrl,
    maxConnections: config.dbPoolMax,
    applicationName: "pricing",
    logger,
    ...databaseDeadlineOptions(config.server),
  });
  // Listening (health NOT_SERVING) while this waits for the database, with
  // backoff, for at most DB_STARTUP_TIMEOUT_MS; then migrations; then ready.
  const startup = migrateWhenReachable(db, { schema: "pricing", directory: migrations, budgetMs: config.dbStartupTimeoutMs, logger });
  const ready = !config.demoCatalogue
    ? startup.ready
    : startup.ready.then(async () => {
        const sql = await readFile(demoCatalogue, "utf8");
        await db.transaction((tx) => tx.query(sql));
        logger.info("demo catalogue loaded (DEMO_CATALOGUE=true)");
      });
  return serve({
    config: config.server,
    logger,
    services,
    // Its health tells callers whether its database answers, or restarts.
    ownResources: databaseResources(db),
    routes: routes(new PricingService(db)),
    startup: { ready, waitingFor: "the database" },
    onShutdown: () => {
      startup.cancel();
      return db.close();
    },
  });
});
