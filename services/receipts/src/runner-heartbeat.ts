import { queueSchema } from "./queue-schema.js";

/** The part of a pg pool (or client) the heartbeat uses. */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>;
}

export interface RunnerHeartbeatOptions {
  db: Queryable;
  /** The id graphile-worker locks this process's jobs with (its worker pool's id); undefined while no runner is up. */
  currentPoolId: () => string | undefined;
  /** How often this process renews its row and looks for dead runners. */
  intervalMs: number;
  /** A runner whose heartbeat is older than this is dead; several intervals, so that one slow beat is not a death. */
  expiryMs: number;
  logger: { info(o: object, m: string): void; warn(o: object, m: string): void };
  /** After each tick, with the pool ids whose jobs it released (tests count ticks with this). */
  onTick?: (released: readonly string[]) => void;
}

export interface RunnerHeartbeat {
  /** Ends the ticks and removes `poolId`'s row (a runner that stopped cleanly has released its jobs itself). */
  stop(poolId?: string): Promise<void>;
}

/**
 * Keeps this process's runner known as alive, and releases the jobs of
 * runners that are not (receipts.release_dead_runners, migration 002):
 * without it, graphile-worker leaves a job locked by a killed process for
 * 4 hours. Every replica runs one; they need no coordination, because the
 * release re-checks each job's lock as it updates it.
 *
 * A tick that fails (the database is away) is logged and the next one
 * tries again: the heartbeat never ends the process.
 */
export function startRunnerHeartbeat(opts: RunnerHeartbeatOptions): RunnerHeartbeat {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const expirySeconds = opts.expiryMs / 1000;

  const tick = async () => {
    const poolId = opts.currentPoolId();
    if (poolId !== undefined) {
      await opts.db.query(
        `INSERT INTO ${queueSchema}.queue_runners (pool_id) VALUES ($1)
           ON CONFLICT (pool_id) DO UPDATE SET heartbeat_at = now()`,
        [poolId],
      );
    }
    const r = await opts.db.query(`SELECT ${queueSchema}.release_dead_runners(make_interval(secs => $1)) AS released`, [expirySeconds]);
    const released = (r.rows[0]?.["released"] as string[] | undefined) ?? [];
    if (released.length > 0) opts.logger.info({ released }, "released the jobs of queue runners that stopped beating");
    return released;
  };

  const loop = () => {
    if (stopped) return;
    running = tick().then(
      (released) => opts.onTick?.(released),
      (err: unknown) => opts.logger.warn({ err }, "queue heartbeat failed; trying again at the next interval"),
    );
    void running.then(() => {
      if (!stopped) timer = setTimeout(loop, opts.intervalMs);
    });
  };
  loop();

  return {
    async stop(poolId) {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
      if (poolId !== undefined) {
        await opts.db.query(`DELETE FROM ${queueSchema}.queue_runners WHERE pool_id = $1`, [poolId]).catch((err: unknown) => {
          // Its row expires; its jobs were released by graphile-worker on stop.
          opts.logger.warn({ err }, "could not remove this runner's heartbeat row");
        });
      }
    },
  };
}
