import { Code, ConnectError } from "@connectrpc/connect";
import { currentScope, shouldFail } from "@platform/resilience";
import pg from "pg";
import {
  connectionFailureReason,
  databaseMetrics,
  reportConnectionLoss,
  serverFaultNow,
  unreachableNow,
  watchedClientClass,
  type Database,
  type DatabaseOptions,
  type PoolStats,
  type PoolStatsSource,
  type Tx,
} from "@platform/database";
import { naiveAttempts } from "./naive-interceptors.js";

/**
 * The storm lab's "naive" database client: what most stacks run by default,
 * so that naive and platform differ only in the resilience layer (same pg,
 * same metrics, same injected faults). Installed by the naive plug-in
 * (plugin.ts) through @platform/database's useDatabaseFactory.
 * A fixed client-side query timeout (node-postgres' `query_timeout`: the
 * client stops waiting, the statement keeps running on the server), no
 * statement_timeout, no cancel, an unbounded wait for a pool connection, no
 * notion of the caller's deadline, and, like every other naive hop, three
 * attempts with plain exponential backoff. Never use it outside the lab.
 */
export function createNaiveDatabase(opts: DatabaseOptions & { queryTimeoutMs: number }): Database {
  const metrics = databaseMetrics();
  const pool = new pg.Pool({
    connectionString: opts.connectionString,
    max: opts.maxConnections,
    application_name: opts.applicationName ?? opts.name,
    query_timeout: opts.queryTimeoutMs,
    // Naive in its resilience, not in its process safety: the lab compares
    // timeouts and retries, not which side crashes on a dropped connection.
    Client: watchedClientClass((_client, loss) => {
      reportConnectionLoss(opts.name, loss, opts.logger);
      opts.onConnectionLost?.(loss);
    }),
  });
  pool.on("error", (err) => opts.onIdleConnectionError?.(err));
  const stats = (): PoolStats => ({
    total: pool.totalCount,
    idle: pool.idleCount,
    waiting: pool.waitingCount,
    inUse: pool.totalCount - pool.idleCount,
  });
  const source: PoolStatsSource = { name: opts.name, stats };
  metrics.sources.add(source);
  const unavailable = (e: unknown) => {
    const reason = connectionFailureReason(e);
    return reason ? new ConnectError(`${opts.name}: database unavailable: ${reason}`, Code.Unavailable) : e;
  };
  let closing: Promise<void> | undefined;

  const attempt: Database["transaction"] = async (fn, txOpts) => {
    if (unreachableNow()) throw new ConnectError(`${opts.name}: database unavailable: unreachable (injected fault)`, Code.Unavailable);
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (e) {
      throw unavailable(e);
    }
    // A checked-out connection that dies between statements (server
    // restart) emits 'error'; unhandled, it would kill the process. The
    // next statement on it fails and is reported as usual.
    const onError = () => {};
    client.on("error", onError);
    let broken: unknown;
    const tx: Tx = {
      async query(text, values) {
        const started = performance.now();
        try {
          const r = await client.query(text, values);
          metrics.statements.inc({ db: opts.name, outcome: "ok" });
          return r;
        } catch (e) {
          metrics.statements.inc({ db: opts.name, outcome: "error" });
          if (connectionFailureReason(e) || /Query read timeout/.test(String(e))) broken = e;
          throw e;
        } finally {
          metrics.statementSeconds.observe({ db: opts.name }, (performance.now() - started) / 1000);
        }
      },
    };
    let begun = false;
    let outcome = "error";
    try {
      await client.query(txOpts?.readOnly ? "BEGIN READ ONLY" : "BEGIN");
      begun = true;
      metrics.transactions.inc({ db: opts.name });
      // Read when the transaction runs, as the platform's client does (see create-database.ts).
      const fault = serverFaultNow();
      if (fault?.latencyMs) await tx.query("SELECT pg_sleep($1) /* injected latency */", [fault.latencyMs / 1000]);
      if (fault && shouldFail(fault)) {
        await tx.query("DO $$ BEGIN RAISE EXCEPTION 'injected fault' USING ERRCODE = 'XX000'; END $$").catch(() => {
          throw new ConnectError(`${opts.name}: database unavailable: injected fault`, Code.Unavailable);
        });
      }
      const result = await fn(tx);
      await client.query("COMMIT");
      outcome = "ok";
      return result;
    } catch (e) {
      await client.query("ROLLBACK").catch(() => {});
      if (/Query read timeout/.test(String(e))) throw new ConnectError(`${opts.name}: query timed out`, Code.DeadlineExceeded);
      throw unavailable(e);
    } finally {
      if (begun) opts.logger?.debug?.({ db: opts.name, requestId: currentScope()?.requestId ?? "", outcome }, "db transaction");
      // A timed-out query is still running on the server: the naive client
      // drops the connection rather than reuse one that is busy.
      client.off("error", onError);
      client.release(broken instanceof Error ? broken : undefined);
    }
  };

  return {
    name: opts.name,
    // The naive client never waits for a restarting server: it retries.
    serverDown: false,
    async transaction(fn, txOpts) {
      for (let n = 1; ; n++) {
        try {
          return await attempt(fn, txOpts);
        } catch (e) {
          const code = e instanceof ConnectError ? e.code : undefined;
          if (n >= naiveAttempts || (code !== Code.Unavailable && code !== Code.DeadlineExceeded)) throw e;
          await new Promise((r) => setTimeout(r, 200 * 2 ** (n - 1)));
        }
      }
    },
    // Migrations that must run outside a transaction: no retries, no timeout, as naive stacks do.
    async session(fn) {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (e) {
        throw unavailable(e);
      }
      try {
        return await fn({ query: (text, values) => client.query(text, values) });
      } finally {
        client.release();
      }
    },
    stats,
    close() {
      closing ??= (async () => {
        metrics.sources.delete(source);
        await pool.end();
      })();
      return closing;
    },
  };
}
