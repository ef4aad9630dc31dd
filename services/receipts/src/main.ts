import { startServiceDatabase } from "@platform/database";
import { mailerV1 } from "@platform/proto";
import { createDependencyClient, createLogger, databaseDeadlineOptions, runMain, serve } from "@platform/runtime";
import { loadConfig } from "./config.js";
import { deliverBatch } from "./deliver-batch.js";
import { deliveryCounter } from "./delivery-metrics.js";
import { openInterface } from "./interface.js";
import { ReceiptBatches } from "./receipt-batches.js";
import { type Relay, startRelay } from "./relay.js";

/**
 * The receipts worker: no API of its own (health on its RPC port, metrics,
 * probes and faults on its admin port). Its relay claims the receipts that
 * orders wrote in each order's transaction, in batches, and sends them
 * through the mailer.
 */
runMain("receipts", async () => {
  const config = loadConfig(process.env);
  const logger = createLogger("receipts", config.server.logLevel);
  const deadlines = databaseDeadlineOptions(config.server);
  const { db, startup } = startServiceDatabase(config, { migrations: new URL("../migrations", import.meta.url), deadline: deadlines, logger });
  const mailer = createDependencyClient(mailerV1.MailerService, {
    dependency: config.mailer,
    server: config.server,
    // The relay retries this work (a new attempt after a jittered backoff), not the call.
    retry: "none",
  });
  // Serves NOT_SERVING until: the database answers, our migrations are in,
  // and orders may write receipts.
  let relay: Relay | undefined;
  let stopping = false;
  const ready = startup.ready.then(async () => {
    if (stopping) return;
    await openInterface(db, config.enqueuerRoles, logger);
    relay = startRelay({
      batches: new ReceiptBatches(db, { statementTimeoutMs: config.statementTimeoutMs, lockTimeoutReserveMs: deadlines.statementReserveMs }),
      deliver: (claimed, opts) =>
        deliverBatch({ mailer, schedule: config.retry, sendTimeoutMs: config.sendTimeoutMs, concurrency: config.concurrency }, claimed, opts),
      batchSize: config.batchSize,
      leaseMs: config.leaseMs,
      pollIntervalMs: config.pollIntervalMs,
      pauseAfterFailureMs: config.pauseAfterFailureMs,
      sendTimeoutMs: config.sendTimeoutMs,
      statementTimeoutMs: config.statementTimeoutMs,
      logger,
      onBatch: deliveryCounter(),
    });
  });
  return serve({
    config: config.server,
    logger,
    services: [],
    routes: () => {},
    startup: { ready, waitingFor: "the database" },
    onShutdown: async () => {
      stopping = true;
      startup.cancel();
      // The batch in flight finishes its sends (each within its deadline) and
      // writes its outcomes; past that the database is away, and the lease
      // brings its receipts back.
      await relay?.stop(config.sendTimeoutMs + 2 * config.statementTimeoutMs + 1000);
      await db.close();
    },
  });
});
