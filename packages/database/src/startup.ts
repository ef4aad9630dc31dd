import { Code, ConnectError } from "@connectrpc/connect";
import { type BackoffPolicy, type Clock, type Scheduler, backoffDelayMs, createScope, runInScope, systemClock, systemScheduler } from "@platform/resilience";
import type { Database } from "./create-database.js";
import { migrate } from "./migrate.js";
import { connectionFailureReason, refusedByServerRules } from "./to-connect-error.js";

export interface StartupRetryOptions {
  /** Named in the error when the budget runs out, e.g. "orders-db". */
  name: string;
  /** How long to keep trying (DB_STARTUP_TIMEOUT_MS in the services). */
  budgetMs: number;
  /** Full-jitter backoff between attempts; default 100 ms doubling up to 2 s. */
  backoff?: BackoffPolicy;
  random?: () => number;
  clock?: Clock;
  scheduler?: Scheduler;
  /** Called before each wait, e.g. to log "database not ready, retrying in ...". */
  onRetry?: (info: { attempt: number; delayMs: number; error: unknown; message: string }) => void;
  /** Stops waiting (shutdown during start-up): the pending wait rejects with the signal's reason. */
  signal?: AbortSignal;
}

export const defaultStartupBackoff: BackoffPolicy = { initialMs: 100, multiplier: 2, maxMs: 2000 };

/**
 * Failures that mean "the database is not there yet" (refused, starting up,
 * shutting down, connection lost, no answer in time), which a starting
 * service waits out. Everything else (a migration's SQL error, bad
 * credentials) fails start-up at once.
 */
export function isTransientStartupError(err: unknown): boolean {
  // Unavailable to a caller, but no wait fixes it (to-connect-error.ts).
  if (refusedByServerRules(err) !== undefined) return false;
  if (err instanceof ConnectError) return err.code === Code.Unavailable || err.code === Code.DeadlineExceeded;
  return connectionFailureReason(err) !== undefined;
}

/**
 * Runs `attempt` until it succeeds, retrying transient failures with
 * full-jitter backoff for at most `budgetMs` in all. `attempt` receives the
 * budget left, to bound its own waits. When the budget is spent, rejects
 * with Unavailable naming the dependency and the last failure.
 */
export async function retryDuringStartup<T>(attempt: (budgetLeftMs: number) => Promise<T>, opts: StartupRetryOptions): Promise<T> {
  const clock = opts.clock ?? systemClock;
  const scheduler = opts.scheduler ?? systemScheduler;
  const policy = opts.backoff ?? defaultStartupBackoff;
  const random = opts.random ?? Math.random;
  const until = clock.now() + opts.budgetMs;
  for (let n = 1; ; n++) {
    try {
      return await attempt(Math.max(0, until - clock.now()));
    } catch (error) {
      if (!isTransientStartupError(error)) throw error;
      const left = until - clock.now();
      const message = error instanceof ConnectError ? error.rawMessage : error instanceof Error ? error.message : String(error);
      if (left <= 0) {
        throw new ConnectError(
          `${opts.name}: not reachable within the start-up budget of ${opts.budgetMs} ms (${n} attempts); last: ${message}`,
          Code.Unavailable,
          undefined,
          undefined,
          error,
        );
      }
      const delayMs = Math.min(left, backoffDelayMs(n, policy, random));
      opts.onRetry?.({ attempt: n, delayMs, error, message });
      await wait(scheduler, delayMs, opts.signal);
    }
  }
}

function wait(scheduler: Scheduler, ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      cancel();
      reject(signal!.reason);
    };
    const cancel = scheduler.setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** One attempt's wait for a connection is at most this, and at least the floor (so the last attempt's error says why, not "no time left"). */
const PING_TIMEOUT_MS = 5_000;
const PING_FLOOR_MS = 250;

/**
 * Start-up that waits for the database instead of dying: a first
 * round trip (`SELECT 1`), then `work` (migrations), retried together with
 * backoff while the database is unreachable, starting, shutting down or
 * drops the connection, within `budgetMs`. Each migration file is applied
 * atomically under an advisory lock, so running `migrate()` again after a
 * lost connection is safe.
 */
export function waitForDatabase<T>(db: Database, work: () => Promise<T>, opts: Omit<StartupRetryOptions, "name">): Promise<T> {
  return retryDuringStartup(
    async (left) => {
      const scope = createScope({ timeoutMs: Math.min(PING_TIMEOUT_MS, Math.max(PING_FLOOR_MS, left)), requestId: "", procedure: `${db.name}/startup` });
      try {
        await runInScope(scope, () => db.transaction((tx) => tx.query("SELECT 1")));
      } finally {
        scope.dispose();
      }
      return work();
    },
    { ...opts, name: db.name },
  );
}

/** What a service's start-up needs from `migrateWhenReachable`. */
export interface DatabaseStartup {
  /** Resolves once the database answered and the migrations are applied; rejects when the budget ran out. */
  ready: Promise<void>;
  /** Stops waiting (shutdown during start-up). */
  cancel(): void;
}

/**
 * The start-up of a service that owns a schema: wait for the database with
 * backoff (one warn line per retry), then apply the schema's migrations
 * (one info line when there were any), within `budgetMs`. Hand `ready` to
 * `serve({ startup })`, which listens NOT_SERVING meanwhile and exits the
 * process when it rejects; call `cancel()` on shutdown.
 */
export function migrateWhenReachable(
  db: Database,
  opts: { schema: string; directory: string; budgetMs: number; logger: { info(o: object, m: string): void; warn(o: object, m: string): void } },
): DatabaseStartup {
  const controller = new AbortController();
  const ready = waitForDatabase(db, () => migrate(db, { schema: opts.schema, directory: opts.directory }), {
    budgetMs: opts.budgetMs,
    signal: controller.signal,
    onRetry: ({ attempt, delayMs, message }) => opts.logger.warn({ attempt, retryInMs: Math.round(delayMs), error: message }, "waiting for the database"),
  }).then(({ applied }) => {
    if (applied.length > 0) opts.logger.info({ applied }, "migrations applied");
  });
  // Not unhandled: serve() and runMain act on it (exit 1 when the budget runs out).
  ready.catch(() => {});
  return { ready, cancel: () => controller.abort(new Error("shutting down")) };
}
