import { startServiceDatabase } from "@platform/database";
import { mailerV1 } from "@platform/proto";
import { createDependencyClient, createLogger, databaseDeadlineOptions, runMain, serve } from "@platform/runtime";
import { loadConfig } from "./config.js";
import { checkGraphilePatch } from "./graphile-patch.js";
import { openInterface, startQueue, type Queue } from "./queue.js";
import { ReceiptStore } from "./receipt-store.js";
import { createSendReceipt } from "./send-receipt.js";

/**
 * The receipts worker: no API of its own (health on its RPC port, metrics,
 * probes and faults on its admin port). It takes receipt jobs that orders
 * queued in each order's transaction and sends them through the mailer.
 */
runMain("receipts", async () => {
  const config = loadConfig(process.env);
  const logger = createLogger("receipts", config.server.logLevel);
  checkGraphilePatch(logger);
  // The bookkeeping's pool (appPoolMax); the queue opens its own.
  const { db, startup } = startServiceDatabase(
    { ...config, dbPoolMax: config.appPoolMax },
    { migrations: new URL("../migrations", import.meta.url), deadline: databaseDeadlineOptions(config.server), logger },
  );
  const mailer = createDependencyClient(mailerV1.MailerService, {
    dependency: config.mailer,
    server: config.server,
    // The queue retries this work (a new job at a jittered time), not the call.
    retry: "none",
  });
  const sendReceipt = createSendReceipt({
    store: new ReceiptStore(db),
    mailer,
    schedule: config.retry,
    jobTimeoutMs: config.jobTimeoutMs,
    pauseAfterFailureMs: config.pauseAfterFailureMs,
    logger,
  });
  // Serves NOT_SERVING until: the database answers, our migrations are in,
  // the queue is installed and running, and orders may enqueue.
  let queue: Queue | undefined;
  let stopping = false;
  const ready = startup.ready.then(async () => {
    if (stopping) return;
    queue = await startQueue({
      connectionString: config.databaseUrl,
      concurrency: config.concurrency,
      pollIntervalMs: config.pollIntervalMs,
      heartbeatIntervalMs: config.heartbeatIntervalMs,
      sendReceipt,
      logger,
    });
    await openInterface(db, config.enqueuerRoles, logger);
  });
  return serve({
    config: config.server,
    logger,
    services: [],
    routes: () => {},
    startup: { ready, waitingFor: "the database and the queue" },
    onShutdown: async () => {
      stopping = true;
      startup.cancel();
      // Lets running jobs finish (each may first wait out a pause after a
      // failure, then has its own deadline), and 2 s to write their outcomes;
      // past that the database is away, and the jobs are left to the heartbeat.
      await queue?.stop(config.pauseAfterFailureMs + config.jobTimeoutMs + 2000);
      await db.close();
    },
  });
});
