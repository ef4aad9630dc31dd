import { databaseResources, startServiceDatabase } from "@platform/database";
import { pricingV1 } from "@platform/proto";
import { apiRoutes, createDependencyClient, createLogger, databaseDeadlineOptions, runMain, serve } from "@platform/runtime";
import { defaults, loadConfig } from "./config.js";
import { OrderChangeFeed } from "./order-change-feed.js";
import { OrderStore } from "./order-store.js";
import { OrdersService } from "./orders-service.js";
import { waitForReceiptsInterface } from "./receipts-interface.js";

runMain("orders", async () => {
  const config = loadConfig(process.env);
  const logger = createLogger("orders", config.server.logLevel);
  // Listening (health NOT_SERVING) while this waits for the database, with
  // backoff, for at most DB_STARTUP_TIMEOUT_MS; then migrations; then ready.
  const { db, startup } = startServiceDatabase(config, {
    migrations: new URL("../migrations", import.meta.url),
    deadline: databaseDeadlineOptions(config.server),
    logger,
  });
  // Every order queues its receipt in its own transaction: not ready before that is possible.
  const stopWaiting = new AbortController();
  const ready = startup.ready.then(() => waitForReceiptsInterface(db, { budgetMs: config.dbStartupTimeoutMs, signal: stopWaiting.signal, logger }));
  const pricing = createDependencyClient(pricingV1.PricingService, {
    dependency: config.pricing,
    server: config.server,
    // Below the edge nothing retries: one attempt per call.
    retry: "none",
  });
  const store = new OrderStore(db);
  const changes = new OrderChangeFeed(config.databaseUrl, logger);
  const impl = new OrdersService({ store, changes, pricing, idempotencyRetentionHours: config.idempotencyRetentionHours });
  // Expired keys no longer protect anything; lookups already ignore them.
  const purge = setInterval(() => {
    store.purgeExpiredKeys().then(
      (n) => n > 0 && logger.info({ purged: n }, "expired idempotency records purged"),
      (e: unknown) => logger.warn({ err: e }, "purging expired idempotency records failed; will retry"),
    );
  }, 60_000);
  purge.unref();
  return serve({
    config: config.server,
    logger,
    // Its health tells callers whether its database answers, or restarts.
    ownResources: databaseResources(db),
    ...apiRoutes(defaults.apis, impl),
    startup: { ready, waitingFor: "the database and the receipts queue" },
    onShutdown: async () => {
      startup.cancel();
      stopWaiting.abort(new Error("shutting down"));
      clearInterval(purge);
      await changes.close();
      await db.close();
    },
  });
});
