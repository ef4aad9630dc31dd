import { Code, ConnectError } from "@connectrpc/connect";
import {
  type CallScope,
  abortReason,
  cellsOf,
  createScope,
  currentScope,
  defaultDeadlineBudget,
  histogramCellsOf,
  remainingMs,
  shouldFail,
} from "@platform/resilience";
import pg from "pg";
import { acquireConnection } from "./acquire-connection.js";
import { type ConnectionLoss, type DatabaseLogger, lossCauses, lossOf, markUse, reportConnectionLoss, watchedClientClass } from "./connection-watch.js";
import { ConnectionSlots, SlotWaitError } from "./connection-slots.js";
import { ReconnectGate, ReconnectWaitError } from "./reconnect-gate.js";
import { type PoolStatsSource, databaseMetrics } from "./metrics.js";
import { scopeEndedError } from "./scope-ended-error.js";
import { connectionFailureReason, connectionLostError, refusedWhileRestarting, toConnectError, unavailableDetails } from "./to-connect-error.js";
import { statementTarget } from "./statement-span.js";
import { ScopedTx, type Tx } from "./tx.js";
import { serverFaultNow, unreachableNow } from "./fault-now.js";

export interface DatabaseOptions {
  /** Dependency name used in error messages and the `db` metric label, e.g. "stock-db". */
  name: string;
  connectionString: string;
  /** Pool size: this dependency's bulkhead. */
  maxConnections: number;
  /**
   * Do not start (or wait for a connection) with less time than this left.
   * A service passes its own DEADLINE_MIN_BUDGET_MS (runtime's
   * `databaseDeadlineOptions`), the same minimum its dependency calls keep.
   */
  minBudgetMs: number;
  /** statement_timeout = remaining - reserve (at least 1), leaving time to report the error. Default 5; a service passes its DEADLINE_HOP_RESERVE_MS. */
  statementReserveMs?: number;
  /** Deadline for work outside any request scope (startup jobs, scripts). Default 5000. */
  fallbackTimeoutMs?: number;
  /** Shown in pg_stat_activity; defaults to `name`. */
  applicationName?: string;
  /** An idle pooled connection died (e.g. PostgreSQL restarted). The pool has already dropped it. */
  onIdleConnectionError?: (err: Error) => void;
  /** Receives one warn line per lost connection (pino's logger fits). */
  logger?: DatabaseLogger;
  /** Called once per established connection that ended without us ending it (after the metric and the log line). */
  onConnectionLost?: (loss: ConnectionLoss) => void;
}

export interface TransactionOptions {
  readOnly?: boolean;
}

export interface PoolStats {
  /** Open connections (including ones being established). */
  total: number;
  idle: number;
  /** Callers waiting for a connection. */
  waiting: number;
  /** Connections checked out or being established. */
  inUse: number;
}

export interface Database {
  readonly name: string;
  /**
   * The server refuses connections (restarting, failing over) and
   * transactions wait for it within their deadlines (reconnect-gate.ts).
   */
  readonly serverDown: boolean;
  /**
   * Runs `fn` in a transaction bound to the current request's deadline (or
   * the fallback): refuses to start without enough time, waits for a
   * connection only as long as the deadline allows, sets a transaction-local
   * statement_timeout, and cancels the running statement on the server
   * when the caller goes away. Commits when `fn` resolves, rolls back when
   * it throws. Connection failures and cancellations come out as
   * ConnectErrors; other errors (constraint violations...) unchanged.
   */
  transaction<T>(fn: (tx: Tx) => Promise<T>, opts?: TransactionOptions): Promise<T>;
  /**
   * Runs `fn` on one connection outside a transaction: each statement
   * commits on its own. For the statements PostgreSQL refuses inside one
   * (CREATE INDEX CONCURRENTLY, VACUUM). The deadline, the minimum budget
   * and the cancel on abort apply as in `transaction`.
   */
  session<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  stats(): PoolStats;
  /** Closes the pool once checked-out connections are back; later transactions fail with Unavailable. Idempotent. */
  close(): Promise<void>;
}

/** Connections found dead at checkout before we give up on this transaction. */
const MAX_DEAD_CHECKOUTS = 3;
/** Connection attempts one checkout makes while the server refuses them; between them it waits at the reconnect gate. */
const MAX_REFUSED_CONNECTS = 3;
/** A probe's connection attempt gives up after this (a blackholed server answers nothing). */
const PROBE_CONNECT_TIMEOUT_MS = 1_000;

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Makes a database client from the options; `platform` makes the platform's
 * own (or the previous factory's), for a factory that only wraps or
 * replaces it for some options.
 */
export type DatabaseFactory = (opts: DatabaseOptions, platform: (opts: DatabaseOptions) => Database) => Database;

let factory: (opts: DatabaseOptions) => Database = createPlatformDatabase;

/**
 * A plug-in's composition point for databases: every createDatabase() call
 * from now on in this process goes through `f` (see @platform/runtime's
 * plugin.ts for servers and clients). The storm lab's baseline uses it.
 */
export function useDatabaseFactory(f: DatabaseFactory): void {
  const previous = factory;
  factory = (opts) => f(opts, previous);
}

/** A database client, as the installed factory makes it (by default the platform's, below). */
export function createDatabase(opts: DatabaseOptions): Database {
  return factory(opts);
}

function createPlatformDatabase(opts: DatabaseOptions): Database {
  const name = opts.name;
  const minBudgetMs = opts.minBudgetMs;
  const statementReserveMs = opts.statementReserveMs ?? defaultDeadlineBudget.hopReserveMs;
  const fallbackTimeoutMs = opts.fallbackTimeoutMs ?? 5000;
  const metrics = databaseMetrics();
  const target = statementTarget(opts.connectionString, name);
  for (const cause of lossCauses) metrics.connectionsLost.inc({ db: name, cause }, 0);
  // Counted on every transaction, in cells (metrics.ts).
  const poolWait = histogramCellsOf(metrics.poolWait, ["db"]).cell(name);
  const transactions = cellsOf(metrics.transactions, ["db"]).cell(name);
  const pool = new pg.Pool({
    connectionString: opts.connectionString,
    max: opts.maxConnections,
    application_name: opts.applicationName ?? name,
    keepAlive: true,
    // Every client listens for 'error' from construction to after its end
    // (see connection-watch.ts): no window in which a dying connection is
    // an unhandled 'error' event, which would kill the process.
    Client: watchedClientClass((_client, loss) => {
      reportConnectionLoss(name, loss, opts.logger);
      opts.onConnectionLost?.(loss);
    }),
  });
  // pg-pool re-emits an idle client's error here after removing the client;
  // without a listener that would be an unhandled 'error' on the pool. The
  // next checkout opens a fresh connection.
  pool.on("error", (err) => opts.onIdleConnectionError?.(err));
  pool.on("acquire", (client) => markUse(client, "in_use"));
  pool.on("release", (_err, client) => markUse(client, "idle"));
  const slots = new ConnectionSlots(opts.maxConnections);
  // A server that refuses connections while it restarts or fails over is
  // waited for (reconnect-gate.ts): one probe at a time reconnects.
  const gate = new ReconnectGate({
    probe: async () => {
      const probe = new pg.Client({
        connectionString: opts.connectionString,
        application_name: `${opts.applicationName ?? name} (reconnect probe)`,
        connectionTimeoutMillis: PROBE_CONNECT_TIMEOUT_MS,
      });
      // A server that ends the session right after start-up would otherwise be an unhandled 'error'.
      probe.on("error", () => {});
      try {
        await probe.connect();
      } catch (err) {
        // Anything but a restart's refusal (bad credentials...) lifts the
        // gate: the next checkout then fails with that error, at once.
        if (refusedWhileRestarting(err)) throw err;
      } finally {
        await probe.end().catch(() => {});
      }
    },
    onChange(change) {
      metrics.serverDown.set({ db: name }, change.down ? 1 : 0);
      if (change.down)
        opts.logger?.warn({ db: name, error: errorMessage(change.error) }, "database refuses connections; requests wait for it within their deadlines");
      else opts.logger?.warn({ db: name, downMs: Math.round(change.downMs), probes: change.probes }, "database accepts connections again");
    },
  });
  metrics.serverDown.set({ db: name }, 0);
  pool.on("connect", () => gate.reportConnected());
  let closing: Promise<void> | undefined;

  const stats = (): PoolStats => {
    const total = pool.totalCount;
    const idle = pool.idleCount;
    return { total, idle, waiting: slots.waiting + gate.waiting + pool.waitingCount, inUse: total - idle };
  };
  const source: PoolStatsSource = { name, stats };
  metrics.sources.add(source);

  const reject = (reason: "budget" | "pool_wait", message: string): ConnectError => {
    metrics.rejected.inc({ db: name, reason });
    return new ConnectError(`${name}: ${message}`, Code.DeadlineExceeded);
  };

  /** The server refused connections for as long as the caller could wait. */
  const serverDownError = (err: ReconnectWaitError): ConnectError => {
    const reason = connectionFailureReason(err.cause) ?? errorMessage(err.cause);
    return new ConnectError(
      `${name}: database unavailable: ${reason}; waited ${Math.round(err.waitedMs)} ms for it to accept connections`,
      Code.Unavailable,
      undefined,
      unavailableDetails(name),
      err.cause,
    );
  };

  /**
   * A connection for `scope`, waited for no longer than leaves `minBudgetMs`
   * to use it. Its slot is the caller's to release.
   */
  async function checkout(scope: CallScope): Promise<pg.PoolClient> {
    const remaining = remainingMs(scope);
    if (remaining < minBudgetMs) throw reject("budget", `not enough time left to start (${Math.max(0, Math.floor(remaining))}ms)`);
    if (scope.signal.aborted) throw scopeEndedError(name, scope, "the transaction started");

    const waitStarted = performance.now();
    let client: pg.PoolClient;
    for (let dead = 0, refused = 0; ; ) {
      try {
        // While the server refuses connections, this waits for it rather than fails.
        client = await acquireConnection(pool, slots, scope.signal, remainingMs(scope) - minBudgetMs, gate, scope.park);
      } catch (err) {
        if (err instanceof ReconnectWaitError) {
          if (err.reason === "aborted" && abortReason(scope) !== "deadline") throw scopeEndedError(name, scope, "the database accepted connections");
          metrics.rejected.inc({ db: name, reason: "server_down" });
          throw serverDownError(err);
        }
        if (!(err instanceof SlotWaitError)) {
          // A refusal like a restart's: wait for the server (the gate), then
          // connect again. Nothing was sent, so this repeats no work; the
          // count bounds a server that flaps between accepting and refusing.
          if (refusedWhileRestarting(err) && ++refused < MAX_REFUSED_CONNECTS && remainingMs(scope) >= minBudgetMs) {
            gate.reportRefused(err);
            continue;
          }
          throw toConnectError(err, name, scope);
        }
        if (err.reason === "aborted" && abortReason(scope) !== "deadline") {
          throw scopeEndedError(name, scope, "a connection was available");
        }
        throw reject("pool_wait", "timed out waiting for a connection");
      } finally {
        poolWait.observe((performance.now() - waitStarted) / 1000);
      }
      // Lost before we sent anything on it (terminated right after it was
      // opened, in the same read as its ReadyForQuery): destroy it and take
      // another. Nothing was sent, so this is not a retry of the caller's work.
      const loss = lossOf(client);
      if (loss === undefined) break;
      client.release(loss.error);
      slots.release();
      if (++dead >= MAX_DEAD_CHECKOUTS || remainingMs(scope) < minBudgetMs) throw connectionLostError(name, loss);
    }

    // The wait may have used up the budget, or the caller may have left meanwhile.
    if (remainingMs(scope) < minBudgetMs || scope.signal.aborted) {
      client.release();
      slots.release();
      throw scope.signal.aborted && abortReason(scope) !== "deadline"
        ? scopeEndedError(name, scope, "the transaction started")
        : reject("pool_wait", "timed out waiting for a connection");
    }
    return client;
  }

  async function run<T>(scope: CallScope, fn: (tx: Tx) => Promise<T>, txOpts: (TransactionOptions & { autocommit?: boolean }) | undefined): Promise<T> {
    if (unreachableNow())
      throw new ConnectError(`${name}: database unavailable: unreachable (injected fault)`, Code.Unavailable, undefined, unavailableDetails(name));
    const client = await checkout(scope);
    const tx = new ScopedTx(client, scope, { dbName: name, target, minBudgetMs, statementReserveMs, metrics, autocommit: txOpts?.autocommit ?? false });
    let begun = false;
    let outcome = "error";
    /** The caller stopped waiting for a statement in flight (ScopedTx.detached): the ROLLBACK and the release go on after it has its answer. */
    let cleanupAfterAnswer = false;
    try {
      await tx.begin(txOpts?.readOnly ?? false);
      begun = true;
      transactions.value++;
      // Read when the statement runs, not before the pool wait: a
      // transaction that queued while a fault was on and starts after it
      // was cleared runs as the database now is.
      const fault = serverFaultNow();
      if (fault) await injectDatabaseFault(tx, fault, name);
      const result = await fn(tx);
      await tx.commit();
      outcome = "ok";
      return result;
    } catch (err) {
      if (tx.detached) {
        cleanupAfterAnswer = true;
        // rollback() waits for the cancel (or the grace that drops the connection); it does not reject, and the release follows either way.
        const cleanUp = () => {
          tx.release();
          slots.release();
        };
        void tx.rollback().then(cleanUp, cleanUp);
      } else await tx.rollback();
      throw toConnectError(err, name, scope);
    } finally {
      // Guarded: the line's object would be built for every transaction, and debug is off by default.
      if (begun && opts.logger?.debug && opts.logger.isLevelEnabled?.("debug") !== false)
        opts.logger.debug({ db: name, requestId: scope.requestId, outcome }, "db transaction");
      if (!cleanupAfterAnswer) {
        tx.release();
        slots.release();
      }
    }
  }

  async function inScope<T>(fn: (tx: Tx) => Promise<T>, txOpts: (TransactionOptions & { autocommit?: boolean }) | undefined): Promise<T> {
    const inbound = currentScope();
    if (inbound) return run(inbound, fn, txOpts);
    // Outside a request there is still a deadline: nothing runs unbounded.
    const own = createScope({ timeoutMs: fallbackTimeoutMs, requestId: "", procedure: `${name}/transaction` });
    try {
      return await run(own, fn, txOpts);
    } finally {
      own.dispose();
    }
  }

  return {
    name,
    get serverDown() {
      return gate.down;
    },
    transaction: (fn, txOpts) => inScope(fn, txOpts),
    session: (fn) => inScope(fn, { autocommit: true }),
    stats,
    close() {
      // Idempotent: shutdown paths often call it twice, and pg-pool throws on a second end().
      closing ??= (async () => {
        gate.close();
        metrics.sources.delete(source);
        await pool.end();
      })();
      return closing;
    },
  };
}

/**
 * Injected faults run on the server, so they cost what the real thing
 * costs: a slow statement holds its connection and is cancelled at the
 * deadline like any other; a failure is a real round trip that fails.
 */
async function injectDatabaseFault(tx: Tx, fault: { latencyMs?: number; errorRate?: number }, name: string): Promise<void> {
  if (fault.latencyMs) await tx.query("SELECT pg_sleep($1) /* injected latency */", [fault.latencyMs / 1000]);
  if (!shouldFail(fault)) return;
  try {
    await tx.query("DO $$ BEGIN RAISE EXCEPTION 'injected fault' USING ERRCODE = 'XX000'; END $$");
  } catch (e) {
    // Reported as what a failing database looks like to its callers.
    if (e instanceof ConnectError) throw e;
    throw new ConnectError(`${name}: database unavailable: injected fault`, Code.Unavailable, undefined, unavailableDetails(name));
  }
}
