import type { Database } from "@platform/database";
import type { Logger as Pino } from "@platform/runtime";
import { EventEmitter } from "node:events";
import { Logger, run, type Runner, type WorkerEvents } from "graphile-worker";
import { createQueuePool } from "./queue-pool.js";
import { queueSchema } from "./queue-schema.js";
import { sendReceiptTask } from "./receipt-store.js";
import { startRunnerHeartbeat } from "./runner-heartbeat.js";
import { tolerateUnreturnedLocalJobs } from "./unreturned-jobs.js";

export { queueSchema };

export interface Queue {
  /**
   * Stops taking jobs, lets the running ones finish and hands back the rest,
   * within `budgetMs`. Past it (the database is away: graphile-worker retries
   * writing a finished job's outcome for minutes), the runner is left as it
   * is and its heartbeat ends: the jobs it still holds are released by a live
   * runner (another replica, or this service's next start) once its beats
   * expire (runner-heartbeat.ts), and run again.
   */
  stop(budgetMs: number): Promise<void>;
}

/**
 * graphile-worker's batching and planning settings (docs/outbox.md, "What
 * an order's receipt costs the database", has the measurements).
 */
export interface QueueTuning {
  /**
   * Jobs one fetch locks and hands to this process's runners
   * (graphile-worker's localQueue.size); -1: each runner fetches its own,
   * one at a time. Default: concurrency + 1, graphile-worker's suggested
   * start. Jobs locked here and not started go back after its ttl (5 min),
   * or on shutdown, or (process killed) by the heartbeat's release.
   */
  localQueueSize: number;
  /**
   * How long completions wait to be written together (one DELETE). A job
   * stays locked this much longer after it ran; a process killed in that
   * window runs it again, which the receipt's idempotency absorbs.
   */
  completeJobBatchDelayMs: number;
  /**
   * The queue's connections plan graphile-worker's prepared statements once
   * (plan_cache_mode = force_generic_plan) instead of again at each run.
   */
  genericPlans: boolean;
}

export const defaultTuning = (concurrency: number): QueueTuning => ({
  localQueueSize: concurrency + 1,
  completeJobBatchDelayMs: 10,
  genericPlans: true,
});

/** A runner is dead when its heartbeat is this many intervals old: one late beat is not a death. */
export const heartbeatsToExpiry = 3;

/** After the runner's stop, how long removing its heartbeat row and closing the pool may take. */
const cleanupBudgetMs = 1000;

/** Whether `work` settled within `ms` (it is not cancelled when it did not). */
async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  const settled = work.then(
    () => true,
    () => true,
  );
  try {
    return await Promise.race([settled, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Waits between restarts of a runner that stopped by itself (the database went away for longer than its own retries). */
const restartDelaysMs = [500, 1000, 2000, 5000, 10_000];

/**
 * Installs graphile-worker's schema (its own migrations, idempotent) and
 * starts `concurrency` job runners on a pool of their own: jobs arrive by
 * LISTEN/NOTIFY as their transaction commits, and a job scheduled for later
 * (a retry) is found by polling every `pollIntervalMs`.
 *
 * A database that restarts or drops connections must not end the process:
 * the pool logs idle connections it loses, graphile-worker retries its own
 * queries and reconnects its listener, and when a runner gives up anyway
 * (its promise rejects: the database stayed away) it is started again after
 * a growing pause, until `stop()`. Jobs that were running are released by
 * graphile-worker and run again; the receipt's conditional update and the
 * mailer's idempotency key keep each receipt one receipt.
 *
 * Jobs that graphile-worker could not release (the process was killed, or
 * its runner ended with the database away) stay locked by that runner's id
 * for 4 hours in graphile-worker alone. The heartbeat (runner-heartbeat.ts)
 * releases them once the runner has missed `heartbeatsToExpiry` beats.
 */
export async function startQueue(opts: {
  connectionString: string;
  concurrency: number;
  pollIntervalMs: number;
  sendReceipt: (payload: unknown) => Promise<unknown>;
  logger: Pino;
  /** How often this process's runner proves it is alive, and looks for dead runners whose jobs it releases (runner-heartbeat.ts). */
  heartbeatIntervalMs: number;
  tuning?: Partial<QueueTuning>;
  /** After each heartbeat (tests count them). */
  onHeartbeat?: (released: readonly string[]) => void;
}): Promise<Queue> {
  const tuning = { ...defaultTuning(opts.concurrency), ...opts.tuning };
  // A runner stopping with jobs in its local queue must not end the process (unreturned-jobs.ts).
  if (tuning.localQueueSize > 1) tolerateUnreturnedLocalJobs(opts.logger);
  // One connection per runner, one for LISTEN, one spare for bookkeeping and the heartbeat.
  // A lost queue connection may have taken a fetch's answer with it: the supervisor then retires the runner (retire() below).
  let connectionLost = false;
  let onConnectionLost: (() => void) | undefined;
  const pool = createQueuePool({
    connectionString: opts.connectionString,
    max: opts.concurrency + 2,
    genericPlans: tuning.genericPlans,
    logger: opts.logger,
    onConnectionLost: () => {
      connectionLost = true;
      onConnectionLost?.();
    },
  });
  const levels = { error: "error", warning: "warn", info: "debug", debug: "debug" } as const;
  const logger = new Logger((scope) => (level, message, meta) => opts.logger[levels[level]]({ queue: scope, ...meta }, message));
  // The id graphile-worker locks jobs with: its worker pool's, new at each (re)start.
  let poolId: string | undefined;
  const start = () => {
    const events: WorkerEvents = new EventEmitter();
    events.on("pool:create", ({ workerPool }) => {
      poolId = workerPool.id;
    });
    return run({
      pgPool: pool,
      events,
      schema: queueSchema,
      concurrency: opts.concurrency,
      pollInterval: opts.pollIntervalMs,
      // runMain handles SIGTERM and drains; the runner is stopped in onShutdown.
      noHandleSignals: true,
      logger,
      // Completions and failures go through graphile-worker's batcher (never
      // -1: completions wait tuning.completeJobBatchDelayMs, failures 0),
      // which retries a write that failed (up to 20 times over some minutes,
      // holding the workers back meanwhile) and, when it gives up, shuts the
      // runner down, which the loop below restarts. Both only as patched
      // (patches/README.md): 0.18.0 gave up at the first failure, and its
      // second failure left the shutdown, and so the runner, hung for good
      // (queue-outage.spec.ts). Unbatched, 0.18.0 does not wait on the promise
      // of completeJob/failJob, so a connection lost at that moment became an
      // unhandled rejection that ended the process (the failover test, -m immediate).
      preset: {
        worker: {
          completeJobBatchDelay: tuning.completeJobBatchDelayMs,
          failJobBatchDelay: 0,
          ...(tuning.localQueueSize > 1 ? { localQueue: { size: tuning.localQueueSize } } : {}),
        },
      },
      taskList: {
        [sendReceiptTask]: async (payload) => {
          await opts.sendReceipt(payload);
        },
      },
    });
  };
  let runner: Runner;
  try {
    runner = await start();
  } catch (e) {
    await pool.end();
    throw e;
  }
  let stopped = false;
  let restarts = 0;
  let wake: (() => void) | undefined;
  /** A pause that stop() cuts short. */
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      wake = resolve;
      setTimeout(resolve, ms).unref();
    });
  /** Runners retired and still stopping (stop() waits for them too). */
  const retiring = new Set<Promise<void>>();
  /** Starts a runner in place of one that is gone or retired; false (and a runner that failed, for the loop to retry) when it could not. */
  const replaceRunner = async (): Promise<boolean> => {
    try {
      runner = await start();
      restarts = 0;
      // stop() came while this runner was starting: it stopped the old one, so stop this one here.
      if (stopped) await runner.stop();
      return true;
    } catch (e) {
      restarts++;
      opts.logger.warn({ err: e }, "could not start the queue's runner yet");
      // A runner that failed to start: wait again, then retry, through the supervisor's loop.
      const failed = Promise.reject(e);
      failed.catch(() => {});
      runner = { promise: failed, stop: async () => {} } as unknown as Runner;
      return false;
    }
  };
  /**
   * A queue connection was lost. If a fetch was on it, its statement may
   * have committed (the jobs are locked with this runner's id) while its
   * answer was lost: the runner does not know it holds those jobs, and
   * being alive, its heartbeat keeps them from being released
   * (queue-lost-fetch.spec.ts). So once the database answers again, a new
   * runner (a new id) takes over, the old one stops (its running jobs
   * finish, its local queue goes back), and its id is no longer beaten for:
   * whatever that id still holds is released once its heartbeat row expires
   * (release_dead_runners, migration 002). A job that the old runner was
   * still running past that expiry would run twice, which the receipt's
   * idempotency absorbs (docs/outbox.md).
   */
  const retire = async (old: Runner): Promise<void> => {
    for (let attempt = 0; !stopped; attempt++) {
      // A loss after this point is a new one, for the next retirement.
      connectionLost = false;
      const answers = await pool.query("SELECT 1").then(
        () => true,
        () => false,
      );
      if (answers) break;
      await pause(restartDelaysMs[Math.min(attempt, restartDelaysMs.length - 1)]!);
    }
    if (stopped) return;
    const retiredPoolId = poolId;
    poolId = undefined;
    // The old runner stops even when its successor could not start (the database went away again):
    // the supervisor's loop then retries the start, and no runner works on under an id nobody beats for.
    if (await replaceRunner()) {
      opts.logger.info({ retiredPoolId, poolId }, "a queue connection was lost: a new runner took over, so that any job locked by a lost fetch is released");
    }
    const stopping = old.stop().then(
      () => {},
      (err: unknown) =>
        opts.logger.warn({ err, retiredPoolId }, "the retired queue runner did not stop cleanly: its jobs are released once its heartbeat expires"),
    );
    retiring.add(stopping);
    void stopping.finally(() => retiring.delete(stopping));
  };
  const supervise = async (): Promise<void> => {
    while (!stopped) {
      const current = runner;
      const lost = new Promise<"lost">((resolve) => {
        onConnectionLost = () => resolve("lost");
        if (connectionLost) resolve("lost");
      });
      const outcome = await Promise.race([
        current.promise.then(
          () => ({ ended: undefined as unknown }),
          (e: unknown) => ({ ended: e }),
        ),
        lost,
      ]);
      onConnectionLost = undefined;
      if (stopped) return;
      if (outcome === "lost") {
        await retire(current);
        continue;
      }
      // Its jobs may still be locked (the database went away before it could
      // release them): stop beating for it, so that they are released once
      // its row expires (runner-heartbeat.ts), by this process or another.
      poolId = undefined;
      const delayMs = restartDelaysMs[Math.min(restarts, restartDelaysMs.length - 1)]!;
      opts.logger.warn({ err: outcome.ended, delayMs }, "the queue's runner stopped by itself; starting it again");
      await pause(delayMs);
      if (stopped) return;
      // A runner stopping by itself took its connections' losses with it.
      connectionLost = false;
      await replaceRunner();
    }
  };
  const supervised = supervise();
  const heartbeat = startRunnerHeartbeat({
    db: pool,
    currentPoolId: () => poolId,
    intervalMs: opts.heartbeatIntervalMs,
    expiryMs: heartbeatsToExpiry * opts.heartbeatIntervalMs,
    logger: opts.logger,
    onTick: opts.onHeartbeat,
  });
  return {
    async stop(budgetMs) {
      stopped = true;
      wake?.();
      const released = await settlesWithin(
        (async () => {
          await runner.stop().catch(() => {});
          await supervised;
          await Promise.all(retiring);
        })(),
        budgetMs,
      );
      if (!released) {
        opts.logger.warn(
          { budgetMs, poolId },
          "the queue's runner did not stop in time (is the database away?): the jobs it holds are released once its heartbeat expires",
        );
      }
      // A runner that released its jobs as it stopped: its row can go. One that
      // did not: its row stays, to expire. Neither waits on a database that is away.
      await settlesWithin(heartbeat.stop(released ? poolId : undefined), cleanupBudgetMs);
      await settlesWithin(pool.end(), cleanupBudgetMs);
    },
  };
}

/**
 * Lets each role in `roles` (the orders service's) call the two functions
 * that are this service's interface, and nothing else of its schema. Run
 * once the queue is installed, so a caller never finds enqueue_receipt
 * before add_job exists. A role that does not exist (a deployment where
 * every service shares one login) is skipped with a warning.
 */
export async function openInterface(db: Pick<Database, "transaction">, roles: readonly string[], logger: Pino): Promise<void> {
  await db.transaction(async (tx) => {
    for (const role of roles) {
      const r = await tx.query<{ grantable: boolean }>("SELECT rolname <> current_user AS grantable FROM pg_roles WHERE rolname = $1", [role]);
      if (r.rows[0]?.grantable !== true) {
        logger.warn({ role }, "no such role apart from this service's own: enqueue_receipt not granted to it");
        continue;
      }
      // The name was checked to be a plain identifier (config.ts).
      await tx.query(`GRANT USAGE ON SCHEMA ${queueSchema} TO ${role}`);
      await tx.query(`GRANT EXECUTE ON FUNCTION ${queueSchema}.enqueue_receipt(uuid), ${queueSchema}.receipt_status(uuid) TO ${role}`);
    }
  });
}
