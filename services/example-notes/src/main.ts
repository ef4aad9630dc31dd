import { fileURLToPath } from "node:url";
import { createDatabase, databaseResources, migrateWhenReachable } from "@platform/database";
import { createLogger, databaseDeadlineOptions, runMain, serve } from "@platform/runtime";
import { loadConfig, manifest } from "./config.js";
import { ExampleNotesService } from "./example-notes-service.js";
import { routes, services } from "./routes.js";

const migrations = fileURLToPath(new URL("../migrations", import.meta.url));

runMain("example-notes", async () => {
  const config = loadConfig(process.env);
  const logger = createLogger("example-notes", config.server.logLevel);
  const db = createDatabase({
    name: "example-notes-db",
    connectionString: config.databaseUrl,
    maxConnections: config.dbPoolMax,
    applicationName: "example-notes",
    logger,
    ...databaseDeadlineOptions(config.server),
  });
  // Listening (health NOT_SERVING) while this waits for the database, with
  // backoff, for at most DB_STARTUP_TIMEOUT_MS; then migrations; then ready.
  const startup = migrateWhenReachable(db, { schema: manifest.database.schema, directory: migrations, budgetMs: config.dbStartupTimeoutMs, logger });
  return serve({
    config: config.server,
    logger,
    services,
    // Its health tells callers whether its database answers, or restarts.
    ownResources: databaseResources(db),
    routes: routes(new ExampleNotesService(db)),
    startup: { ready: startup.ready, waitingFor: "the database" },
    onShutdown: () => {
      startup.cancel();
      return db.close();
    },
  });
});
