import { fileURLToPath } from "node:url";
import { createDatabase, migrate, waitForDatabase } from "@platform/database";
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
    logger,
    ...databaseProfileOptions(config.server),
  });
  // Listening (health NOT_SERVING) while this waits for the database, with
  // backoff, for at most DB_STARTUP_TIMEOUT_MS; then migrations; then ready.
  const startup = new AbortController();
  const ready = waitForDatabase(db, () => migrate(db, { schema: "pricing", directory: migrations }), {
    budgetMs: config.dbStartupTimeoutMs,
    signal: startup.signal,
    onRetry: ({ attempt, delayMs, message }) => logger.warn({ attempt, retryInMs: Math.round(delayMs), error: message }, "waiting for the database"),
  }).then(({ applied }) => {
    if (applied.length > 0) logger.info({ applied }, "migrations applied");
  });
  ready.catch(() => {}); // handled by serve() and runMain: exit 1 when the budget runs out
  return serve({
    config: config.server,
    logger,
    services,
    routes: routes(new PricingService(db)),
    startup: { ready, waitingFor: "the database" },
    onShutdown: () => {
      startup.abort(new Error("shutting down"));
      return db.close();
    },
  });
});
