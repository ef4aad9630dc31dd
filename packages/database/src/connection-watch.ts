import pg from "pg";
import { databaseMetrics } from "./metrics.js";

/**
 * Why an established connection ended without us ending it:
 * - terminated_by_server: the server ended the session (57P01: an
 *   administrator's pg_terminate_backend, or a smart/fast shutdown; any other
 *   FATAL the server sends before closing);
 * - server_crash: 57P02, the server is resetting after a crash or an
 *   immediate shutdown;
 * - timeout: idle-session / idle-in-transaction timeouts (57P05, 25P03),
 *   TCP keep-alive or socket timeouts (ETIMEDOUT), or we dropped it because
 *   the server did not answer a cancel in time;
 * - network: the socket failed (ECONNRESET, EPIPE, unreachable) or closed
 *   without a word from the server (a proxy or pooler closed it, a failover);
 * - other: an error node-pg raised itself (a protocol violation...).
 */
export type LossCause = "terminated_by_server" | "server_crash" | "timeout" | "network" | "other";

export const lossCauses: readonly LossCause[] = ["terminated_by_server", "server_crash", "timeout", "network", "other"];

/** What a connection was doing when it was lost. */
export type ConnectionUse = "idle" | "in_use";

export interface ConnectionLoss {
  cause: LossCause;
  /** SQLSTATE (57P01...) or socket code (ECONNRESET...); undefined when the socket just closed. */
  code: string | undefined;
  /** The server's or the socket's own words, e.g. "terminating connection due to administrator command". */
  message: string;
  use: ConnectionUse;
  /** The error as node-pg reported it (kept as a cause for logs). */
  error: Error;
}

/**
 * The codes an operator expects during failovers, restarts and
 * pg_terminate_backend: logged as one warn line without a stack trace.
 */
export const expectedLossCodes: ReadonlySet<string> = new Set(["57P01", "57P02", "57P03", "ECONNRESET", "EPIPE"]);

const SOCKET_NETWORK = new Set(["ECONNRESET", "EPIPE", "EHOSTUNREACH", "ENETUNREACH", "ENETDOWN", "ECONNABORTED"]);

/** Classifies a lost connection by the code that ended it. */
export function lossCauseOf(code: string): LossCause {
  if (code === "57P02") return "server_crash";
  if (code === "57P05" || code === "25P03" || code === "ETIMEDOUT") return "timeout";
  if (SOCKET_NETWORK.has(code)) return "network";
  if (/^[0-9A-Z]{5}$/.test(code)) return "terminated_by_server";
  return "other";
}

/** Per-client bookkeeping, kept beside the client (not on it). */
interface Watch {
  /** Became usable (ReadyForQuery after start-up). Failures before that are failed connects, reported by connect(). */
  connected: boolean;
  /** We asked it to end (pool removal, pool end). */
  ending: boolean;
  /** We destroyed its socket ourselves: the server did not answer a cancel. */
  abandoned: boolean;
  use: ConnectionUse;
  /** The server's FATAL, or the socket's error, seen before the connection ended. */
  lastWord: Error | undefined;
  lost: ConnectionLoss | undefined;
}

const watches = new WeakMap<object, Watch>();

/** How a connection ended, once it has been lost; undefined while it is healthy (or ended by us). */
export function lossOf(client: object): ConnectionLoss | undefined {
  return watches.get(client)?.lost;
}

/** Marks a checked-out (in_use) or pooled (idle) connection, for the loss report. */
export function markUse(client: object, use: ConnectionUse): void {
  const w = watches.get(client);
  if (w) w.use = use;
}

/** Records that we are about to destroy this connection's socket because the server stopped answering. */
export function markAbandoned(client: object): void {
  const w = watches.get(client);
  if (w) w.abandoned = true;
}

function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/**
 * A pg.Client class for a pool that listens for 'error' for the client's
 * whole life, from construction to after its socket closed, and reports
 * each established connection that ends without us ending it exactly once.
 *
 * Why a subclass rather than listeners added around checkout: node-pg
 * emits 'error' on a client whenever the server's FATAL (57P01 from
 * pg_terminate_backend, a shutdown) or a socket error arrives while no query
 * is active, and again ("Connection terminated unexpectedly") when the
 * socket closes. pg-pool listens only while the client is idle, and
 * removes its listener synchronously when it hands the client out, before
 * the caller's code can run. A backend terminated just after start-up sends
 * its ReadyForQuery and its FATAL in one TCP read: pg-pool hands the new
 * client out on the first message, and the second is emitted in the same
 * tick, with no listener at all, which node turns into an uncaught
 * exception. Any listener attached after `connect()` resolves is too late.
 */
export function watchedClientClass(onLost: (client: pg.Client, loss: ConnectionLoss) => void): typeof pg.Client {
  return class WatchedClient extends pg.Client {
    constructor(config?: string | pg.ClientConfig) {
      super(config);
      const w: Watch = { connected: false, ending: false, abandoned: false, use: "in_use", lastWord: undefined, lost: undefined };
      watches.set(this, w);
      const report = (err: Error) => {
        if (!w.connected || w.ending || w.lost) return;
        const word = w.abandoned ? err : (w.lastWord ?? err);
        const code = w.abandoned ? "ETIMEDOUT" : codeOf(word);
        const cause: LossCause = w.abandoned
          ? "timeout"
          : code !== undefined
            ? lossCauseOf(code)
            : /^Connection terminated/.test(word.message)
              ? "network"
              : "other";
        const message = w.abandoned ? "no answer to a cancel request in time; connection dropped" : word.message || String(word);
        w.lost = { cause, code, message, use: w.use, error: word };
        try {
          onLost(this, w.lost);
        } catch {
          // Reporting runs inside node-pg's event emission: a throwing logger
          // or callback must not become the uncaught exception this prevents.
        }
      };
      // Attached before connect() attaches node-pg's own listeners, so these run first.
      const connection = (this as unknown as { connection: NodeJS.EventEmitter }).connection;
      connection.on("errorMessage", (msg: Error & { severity?: string }) => {
        // A FATAL or PANIC ends the session: the server closes the socket next.
        if (w.connected && (msg.severity === "FATAL" || msg.severity === "PANIC")) {
          w.lastWord ??= msg;
          report(msg);
        }
      });
      connection.on("error", (err: Error) => {
        if (!w.connected) return;
        w.lastWord ??= err;
        report(err);
      });
      connection.on("end", () => report(new Error("Connection terminated unexpectedly")));
      // Emitted once, on the ReadyForQuery that ends start-up (not in @types/pg).
      (this as NodeJS.EventEmitter).on("connect", () => {
        w.connected = true;
      });
      // The listener for the whole life: after this the client is dead
      // (node-pg marks it not queryable); the pool or the transaction that
      // holds it destroys it.
      this.on("error", (err: Error) => report(err));
    }

    override end(): Promise<void>;
    override end(callback: (err: Error) => void): void;
    override end(callback?: (err: Error) => void): Promise<void> | void {
      const w = watches.get(this);
      if (w) w.ending = true;
      return callback ? super.end(callback) : super.end();
    }
  };
}

/** The part of a logger the database uses. */
export interface DatabaseLogger {
  warn(obj: object, msg: string): void;
  /**
   * One line per transaction that reached the server (`db`, `requestId`,
   * `outcome`), at debug level: attributes database work to the user
   * request that caused it (the storm lab counts attempts per request).
   */
  debug?(obj: object, msg: string): void;
  /** pino's: when it says debug is off, the debug line's object is not built at all. */
  isLevelEnabled?(level: string): boolean;
}

/**
 * Counts a lost connection by cause and logs one warn line: without a stack
 * for the codes every failover or pg_terminate_backend produces, with the
 * error (and its stack) for anything else.
 */
export function reportConnectionLoss(db: string, loss: ConnectionLoss, logger: DatabaseLogger | undefined): void {
  databaseMetrics().connectionsLost.inc({ db, cause: loss.cause });
  const fields = { db, cause: loss.cause, code: loss.code ?? null, use: loss.use, error: loss.message };
  const expected = loss.code === undefined || expectedLossCodes.has(loss.code);
  logger?.warn(expected ? fields : { ...fields, err: loss.error }, "database connection lost; it is replaced");
}
