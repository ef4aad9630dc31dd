import { databaseResources, startServiceDatabase } from "@platform/database";
import { apiRoutes, createLogger, databaseDeadlineOptions, runMain, serve } from "@platform/runtime";
import { defaults, loadConfig } from "./config.js";
import { ExampleNotesService } from "./example-notes-service.js";

runMain("example-notes", async () => {
  const config = loadConfig(process.env);
  const logger = createLogger("example-notes", config.server.logLevel);
  // Listening (health NOT_SERVING) while this waits for the database, with
  // backoff, for at most DB_STARTUP_TIMEOUT_MS; then migrations; then ready.
  const { db, startup } = startServiceDatabase(config, {
    migrations: new URL("../migrations", import.meta.url),
    deadline: databaseDeadlineOptions(config.server),
    logger,
  });
  return serve({
    config: config.server,
    logger,
    // Its health tells callers whether its database answers, or restarts.
    ownResources: databaseResources(db),
    ...apiRoutes(defaults.apis, new ExampleNotesService(db)),
    startup: { ready: startup.ready, waitingFor: "the database" },
    onShutdown: () => {
      startup.cancel();
      return db.close();
    },
  });
});
