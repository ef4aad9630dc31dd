import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { databaseResources, startServiceDatabase } from "@platform/database";
import { apiRoutes, createLogger, databaseDeadlineOptions, runMain, serve } from "@platform/runtime";
import { defaults, loadConfig } from "./config.js";
import { PricingService } from "./pricing-service.js";

const demoCatalogue = fileURLToPath(new URL("../seed/demo-catalogue.sql", import.meta.url));

runMain("pricing", async () => {
  const config = loadConfig(process.env);
  const logger = createLogger("pricing", config.server.logLevel);
  // Listening (health NOT_SERVING) while this waits for the database, with
  // backoff, for at most DB_STARTUP_TIMEOUT_MS; then migrations; then ready.
  const { db, startup } = startServiceDatabase(config, {
    migrations: new URL("../migrations", import.meta.url),
    deadline: databaseDeadlineOptions(config.server),
    logger,
  });
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
    // Its health tells callers whether its database answers, or restarts.
    ownResources: databaseResources(db),
    ...apiRoutes(defaults.apis, new PricingService(db)),
    startup: { ready, waitingFor: "the database" },
    onShutdown: () => {
      startup.cancel();
      return db.close();
    },
  });
});
