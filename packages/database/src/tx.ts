import { Code, ConnectError } from "@connectrpc/connect";
import { type CallScope, abortReason, cellsOf, histogramCellsOf, remainingMs, statementTimeoutMs } from "@platform/resilience";
import type pg from "pg";
import { cancelTargetOf, sendCancelRequest } from "./cancel-request.js";
import type { DatabaseMetrics, StatementOutcome } from "./metrics.js";
import { scopeEndedError } from "./scope-ended-error.js";
import { cancelledError, connectionFailureReason, connectionLostError, readOnlyServerError, toConnectError } from "./to-connect-error.js";
import { lossOf, markAbandoned } from "./connection-watch.js";
import { type StatementTarget, endStatementSpan, startStatementSpan } from "./statement-span.js";

/** The handle a transaction body uses; every statement runs inside the caller's deadline. */
export interface Tx {
  /**
   * Runs one statement (use `$1`-style placeholders for values). Refuses to
   * start once the scope has ended or has less than the minimum budget
   * left; a statement still running when the scope aborts is cancelled on
   * the server.
   */
  // biome-ignore lint/suspicious/noExplicitAny: the same default as pg's own query(), so callers type rows as they do with pg
  query<R extends pg.QueryResultRow = any>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
}

export interface TxSettings {
  dbName: string;
  /**
   * No transaction: every statement commits on its own (see
   * Database.session). No statement_timeout is set then: a session SET
   * would outlive us on a pooled server connection (PgBouncer transaction
   * pooling), so the cancel request alone stops a statement at the deadline.
   */
  autocommit?: boolean;
  /** The database as traces name it. */
  target: StatementTarget;
  minBudgetMs: number;
  statementReserveMs: number;
  metrics: DatabaseMetrics;
}

/**
 * How long a statement may take to come back after its scope aborted (the
 * cancel request normally stops it within milliseconds). Past this the
 * server is not answering: we drop the connection so the caller and the pool
 * slot are not held hostage by a dead peer.
 */
const CANCEL_GRACE_MS = 1_000;

/**
 * statement_timeout applies to each statement from its own start, so the
 * value set at BEGIN lets later statements run past the deadline. When the
 * budget has shrunk by more than this since the last SET LOCAL, the next
 * statement first re-sets it (one extra round trip, only in transactions
 * that have already spent this long). The client-side cancel covers the gap
 * while we are alive; this is what bounds the statement if we die.
 */
const TIMEOUT_REFRESH_MS = 50;

/** What a statement's wait rejects with when the request's calls end first; mapped at once (mapError), never seen outside. */
const callsEnded = new Error("the request's calls ended");

/** One transaction on one checked-out connection, bound to a CallScope. */
export class ScopedTx implements Tx {
  /** The connection must be destroyed instead of returned to the pool. */
  private broken = false;
  /** We destroyed the connection because the server did not answer a cancel. */
  private abandoned = false;
  private finished = false;
  private inFlight = 0;
  private cancellableInFlight = 0;
  private timeoutInForceMs = 0;
  /** The transaction asked to be read-only: a refused write is then its own bug, not a read-only server. */
  private readOnly = false;
  private cancelSent: Promise<void> | undefined;
  private graceTimer: NodeJS.Timeout | undefined;
  /** The last statement error; a COMMIT that the server turned into ROLLBACK rethrows it. */
  private lastFailure: unknown;
  /** Ends the caller's wait for the statement it awaits now (set while one is awaited). */
  private stopWaiting: (() => void) | undefined;
  /**
   * The caller stopped waiting for a statement still in flight: the
   * request's calls ended first (`CallScope.callsEnd`, a hop reserve before
   * the deadline). A database that answers nothing (a frozen server: its
   * statement_timeout cannot fire, nor its answer to the cancel) would
   * otherwise hold the request to its full deadline, and its failure would
   * reach the caller after the caller stopped waiting, blamed on this
   * service instead of its database (docs/architecture.md, "Stacked
   * breakers"). The statement is cancelled as at the deadline; the
   * ROLLBACK and the connection's release come after the caller has its
   * answer (create-database.ts).
   */
  get detached(): boolean {
    return this.callerStoppedWaiting;
  }
  private callerStoppedWaiting = false;

  constructor(
    private readonly client: pg.PoolClient,
    private readonly scope: CallScope,
    private readonly settings: TxSettings,
  ) {
    scope.signal.addEventListener("abort", this.onAbort, { once: true });
    scope.callsEnd?.addEventListener("abort", this.onCallsEnd, { once: true });
    // No 'error' listener here: the pool's clients listen for their whole
    // life (connection-watch.ts), and a lost connection is known by lossOf().
  }

  /** BEGIN and the deadline-derived statement_timeout, in one round trip. */
  async begin(readOnly: boolean): Promise<void> {
    const ms = this.statementTimeoutMs();
    this.readOnly = readOnly;
    if (this.settings.autocommit) return;
    // SET LOCAL, never SET: transaction-scoped, so the value cannot outlive
    // us on a pooled server connection (PgBouncer transaction pooling).
    await this.exec(`BEGIN${readOnly ? " READ ONLY" : ""}; SET LOCAL statement_timeout = ${ms}`, undefined, true);
    this.timeoutInForceMs = ms;
  }

  // biome-ignore lint/suspicious/noExplicitAny: as in the interface above
  async query<R extends pg.QueryResultRow = any>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>> {
    if (this.finished) throw new Error(`${this.settings.dbName}: query on a transaction that has already finished`);
    const { dbName, minBudgetMs, metrics } = this.settings;
    if (this.scope.signal.aborted) throw scopeEndedError(dbName, this.scope, "the statement started");
    const remaining = remainingMs(this.scope);
    if (remaining < minBudgetMs || this.detached || this.scope.callsEnd?.aborted) {
      throw new ConnectError(`${dbName}: not enough time left for a statement (${Math.max(0, Math.floor(remaining))}ms)`, Code.DeadlineExceeded);
    }
    const started = performance.now();
    let outcome: StatementOutcome = "ok";
    let failure: unknown;
    const span = startStatementSpan(this.scope, dbName, this.settings.target, text, remaining);
    try {
      const wanted = this.statementTimeoutMs();
      if (this.timeoutInForceMs - wanted > TIMEOUT_REFRESH_MS) {
        await this.exec(`SET LOCAL statement_timeout = ${wanted}`, undefined, true);
        this.timeoutInForceMs = wanted;
      }
      return await this.exec<R>(text, values, true);
    } catch (err) {
      outcome = this.outcomeOf(err);
      failure = err;
      throw err;
    } finally {
      endStatementSpan(span, outcome, failure);
      // In cells, not prom-client's labelled calls: every statement of every request (metrics.ts).
      cellsOf(metrics.statements, ["db", "outcome"]).cell(dbName, outcome).value++;
      histogramCellsOf(metrics.statementSeconds, ["db"])
        .cell(dbName)
        .observe((performance.now() - started) / 1000);
    }
  }

  /**
   * COMMIT, unless the scope has ended: the caller is gone or out of time,
   * so its work is rolled back rather than committed behind its back.
   */
  async commit(): Promise<void> {
    if (this.settings.autocommit) return;
    if (this.scope.signal.aborted) throw scopeEndedError(this.settings.dbName, this.scope, "commit");
    if (this.detached) throw cancelledError(this.settings.dbName, this.scope);
    const result = await this.exec("COMMIT", undefined, false);
    // PostgreSQL answers COMMIT of a failed transaction (the body caught a
    // statement error and carried on) with ROLLBACK. Reporting success
    // would silently lose the writes.
    if (result.command === "ROLLBACK") {
      throw this.lastFailure !== undefined
        ? toConnectError(this.lastFailure, this.settings.dbName, this.scope)
        : new ConnectError(`${this.settings.dbName}: transaction was rolled back by the server`, Code.Aborted);
    }
  }

  /** Best-effort ROLLBACK; a connection that cannot roll back is destroyed at release. */
  async rollback(): Promise<void> {
    if (this.broken || lossOf(this.client)) return;
    // A cancel still in flight could otherwise hit the ROLLBACK itself.
    await this.cancelSent;
    // A session that failed may have left state behind (a setting, an
    // advisory lock): its connection is closed rather than pooled.
    if (this.settings.autocommit) {
      this.broken = true;
      return;
    }
    try {
      await this.exec("ROLLBACK", undefined, false);
    } catch {
      this.broken = true;
    }
  }

  /** Returns the connection to the pool, or destroys it when it is broken. */
  release(): void {
    this.finished = true;
    clearTimeout(this.graceTimer);
    this.scope.signal.removeEventListener("abort", this.onAbort);
    this.scope.callsEnd?.removeEventListener("abort", this.onCallsEnd);
    const loss = lossOf(this.client);
    this.client.release(loss?.error ?? (this.broken || undefined));
  }

  private statementTimeoutMs(): number {
    return statementTimeoutMs(remainingMs(this.scope), this.settings.statementReserveMs);
  }

  /**
   * Runs a statement, tracking it for cancellation; errors come out mapped.
   * A cancellable statement's caller stops waiting when the request's calls
   * end (see `detached`); the statement counts as in flight until the
   * server answers or its connection is dropped.
   */
  private async exec<R extends pg.QueryResultRow>(text: string, values: unknown[] | undefined, cancellable: boolean): Promise<pg.QueryResult<R>> {
    this.inFlight++;
    if (cancellable) this.cancellableInFlight++;
    if (this.scope.signal.aborted) this.armGrace();
    const settled = () => {
      this.inFlight--;
      if (cancellable) this.cancellableInFlight--;
    };
    let query: Promise<pg.QueryResult<R>>;
    try {
      query = this.client.query<R>(text, values);
    } catch (err) {
      // pg throws some misuse at once (a missing query text): nothing was sent.
      settled();
      this.lastFailure = err;
      throw this.mapError(err);
    }
    // Registered before the caller's await, so it runs first: the counts are right when the caller resumes.
    query.then(settled, settled);
    try {
      return await (cancellable && this.scope.callsEnd ? this.untilCallsEnd(query) : query);
    } catch (err) {
      if (err !== callsEnded) this.lastFailure = err;
      throw this.mapError(err);
    }
  }

  /** `query`'s outcome, or a rejection with `callsEnded` when the request's calls end first. */
  private untilCallsEnd<T>(query: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.stopWaiting = () => {
        this.stopWaiting = undefined;
        this.callerStoppedWaiting = true;
        reject(callsEnded);
      };
      query.then(
        (r) => {
          this.stopWaiting = undefined;
          resolve(r);
        },
        (e: unknown) => {
          this.stopWaiting = undefined;
          reject(e);
        },
      );
      if (this.scope.callsEnd?.aborted) this.stopWaiting();
    });
  }

  private mapError(err: unknown): unknown {
    if (err === callsEnded) return cancelledError(this.settings.dbName, this.scope);
    if (this.abandoned) return cancelledError(this.settings.dbName, this.scope, err);
    const loss = lossOf(this.client);
    if (loss) {
      this.broken = true;
      return connectionLostError(this.settings.dbName, loss);
    }
    if (connectionFailureReason(err) !== undefined) this.broken = true;
    const readOnlyServer = this.readOnly ? undefined : readOnlyServerError(err, this.settings.dbName);
    if (readOnlyServer) {
      // Pooled, this connection would keep reaching the server that takes no writes.
      this.broken = true;
      return readOnlyServer;
    }
    return toConnectError(err, this.settings.dbName, this.scope);
  }

  private outcomeOf(err: unknown): StatementOutcome {
    const cancelled = this.abandoned || this.detached || (err instanceof ConnectError && (err.cause as { code?: unknown } | undefined)?.code === "57014");
    if (!cancelled) return "error";
    const reason = abortReason(this.scope);
    return reason === "cancelled" || reason === "shutdown" ? "cancelled_caller" : "cancelled_deadline";
  }

  /**
   * The scope ended: stop the running statement on the server, not just our
   * wait for it, so its locks and this connection are freed now.
   */
  private readonly onAbort = (): void => {
    if (this.cancellableInFlight > 0 && !this.cancelSent) {
      const target = cancelTargetOf(this.client);
      if (target) this.cancelSent = sendCancelRequest(target, CANCEL_GRACE_MS);
    }
    this.armGrace();
  };

  /** The request's calls ended: cancel as at the deadline, and stop the caller's wait for the statement in flight. */
  private readonly onCallsEnd = (): void => {
    this.onAbort();
    this.stopWaiting?.();
  };

  private armGrace(): void {
    if (this.graceTimer || this.broken) return;
    this.graceTimer = setTimeout(() => {
      this.graceTimer = undefined;
      if (this.inFlight > 0) this.abandon();
    }, CANCEL_GRACE_MS);
    this.graceTimer.unref();
  }

  /** Drops the connection under a statement the server will not stop; its query rejects at once. */
  private abandon(): void {
    this.broken = true;
    this.abandoned = true;
    markAbandoned(this.client);
    const stream = (this.client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream;
    stream?.destroy();
  }
}
