import { Code, ConnectError } from "@connectrpc/connect";
import { type Detail, refusalDetails } from "@platform/proto/error-details";
import { type CallScope, abortReason } from "@platform/resilience";

/** Socket-level failures, with the short reason we put in messages. */
const SOCKET_ERRORS: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  ETIMEDOUT: "connection timed out",
  EPIPE: "connection closed",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ENOTFOUND: "host not found",
  EAI_AGAIN: "host lookup failed",
};

/** SQLSTATEs that mean "this server cannot serve you now", not "your request is wrong". */
const UNAVAILABLE_SQLSTATES: Record<string, string> = {
  "57P01": "terminated by the server",
  "57P02": "server crashed",
  "57P03": "server not accepting connections yet",
  "53300": "too many connections",
};

/**
 * SQLSTATEs of a connection refused by the server's rules: our credentials,
 * its pg_hba.conf, a database that is not there. For a caller the database
 * is unavailable (no request of theirs can change it; the service logs the
 * server's own message for the operator, who can). Unlike the failures
 * above, waiting does not help: a starting service fails at once
 * (startup.ts).
 */
const REFUSED_SQLSTATES: Record<string, string> = {
  "28000": "connection not authorized",
  "28P01": "authentication failed",
  "3D000": "database does not exist",
};

/** The short reason when `err` (or the error a ConnectError was made from) is a connection the server's rules refused. */
export function refusedByServerRules(err: unknown): string | undefined {
  const code = codeOf(err instanceof ConnectError ? err.cause : err);
  const reason = code === undefined ? undefined : REFUSED_SQLSTATES[code];
  return reason === undefined ? undefined : `${reason} (${code})`;
}

/**
 * SQLSTATEs of a transaction the server rolled back because it met another
 * one: nothing is wrong with the request or the server, and the whole
 * transaction may succeed if tried again (ABORTED, "retry at a higher
 * level", failure-class.ts "conflict").
 */
const CONFLICT_SQLSTATES: Record<string, string> = {
  "40001": "serialization failure",
  "40P01": "deadlock detected",
};

/** read_only_sql_transaction: a write on a server that takes none (readOnlyServerError). */
const READ_ONLY_SQLSTATE = "25006";

/** node-pg's own messages for a connection that died or was never usable. */
const CONNECTION_MESSAGES: [RegExp, string][] = [
  [/^Connection terminated/, "connection terminated"],
  [/not queryable/, "connection broken"],
  [/timeout exceeded when trying to connect/, "connect timed out"],
  [/Cannot use a pool after calling end/, "pool closed"],
];

function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === "string") return code;
  // node's happy-eyeballs connect fails with an AggregateError of per-address errors
  if (err instanceof AggregateError) return codeOf(err.errors[0]);
  return undefined;
}

/**
 * The short reason when `err` means the database cannot be reached or the
 * connection is dead; undefined for every other error. A connection in this
 * state must be destroyed, not returned to the pool.
 */
export function connectionFailureReason(err: unknown): string | undefined {
  const code = codeOf(err);
  if (code !== undefined) {
    const socket = SOCKET_ERRORS[code];
    if (socket) return socket;
    const state = UNAVAILABLE_SQLSTATES[code];
    if (state) return `${state} (${code})`;
    if (/^08[0-9A-Z]{3}$/.test(code)) return `connection failure (${code})`;
  }
  const message = err instanceof Error ? err.message : "";
  for (const [pattern, reason] of CONNECTION_MESSAGES) if (pattern.test(message)) return reason;
  return undefined;
}

/**
 * Connection refusals of a server that is restarting, failing over or
 * recovering: refused or reset sockets, 57P01-57P03 (shutting down, crash
 * recovery, starting up), a connection closed during start-up. Such a
 * server is usually back within seconds: a checkout waits for it
 * (reconnect-gate.ts) instead of failing. Refusals by the server's rules,
 * or for want of connection slots (53300), are not waited for.
 */
export function refusedWhileRestarting(err: unknown): boolean {
  const code = codeOf(err);
  if (code !== undefined) return RESTART_CODES.has(code);
  return /^Connection terminated/.test(err instanceof Error ? err.message : "");
}

const RESTART_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "57P01", "57P02", "57P03"]);

/**
 * The error for a statement stopped because its scope ended (or for its
 * server-side twin, statement_timeout, which is set to just before the
 * deadline): what the caller sees depends on why the scope ended.
 */
export function cancelledError(dbName: string, scope: CallScope | undefined, cause?: unknown): ConnectError {
  switch (scope ? abortReason(scope) : undefined) {
    case "cancelled":
      return new ConnectError(`${dbName}: statement cancelled: caller went away`, Code.Canceled, undefined, undefined, cause);
    case "shutdown":
      return new ConnectError(`${dbName}: statement cancelled: server shutting down`, Code.Unavailable, undefined, undefined, cause);
    default:
      return new ConnectError(`${dbName}: statement cancelled at deadline`, Code.DeadlineExceeded, undefined, undefined, cause);
  }
}

/**
 * Maps the database errors whose meaning is the same for every service to
 * a ConnectError: 57014 (query_canceled) to DeadlineExceeded / Canceled /
 * Unavailable by the scope's abort reason, a deadlock or a serialization
 * failure (40P01, 40001) to Aborted, and connection failures and
 * connections refused by the server's rules to Unavailable. Returns every
 * other error UNCHANGED (a unique violation, 23505, means something
 * different to each service, so the service decides). Messages never
 * contain SQL or values; the original error is kept as `cause` for logs.
 */
export function toConnectError(err: unknown, dbName: string, scope?: CallScope): unknown {
  if (err instanceof ConnectError) return err;
  const code = codeOf(err);
  if (code === "57014") return cancelledError(dbName, scope, err);
  const conflict = code === undefined ? undefined : CONFLICT_SQLSTATES[code];
  if (conflict !== undefined) {
    return new ConnectError(`${dbName}: transaction rolled back by a concurrency conflict: ${conflict} (${code})`, Code.Aborted, undefined, undefined, err);
  }
  const reason = connectionFailureReason(err) ?? refusedByServerRules(err);
  if (reason !== undefined) {
    return new ConnectError(`${dbName}: database unavailable: ${reason}`, Code.Unavailable, undefined, unavailableDetails(dbName), err);
  }
  return err;
}

/**
 * The error for work on a connection that was lost under it (the server
 * terminated it, the network dropped it): Unavailable, naming the
 * dependency and what ended the connection, e.g.
 * "orders-db: connection lost: terminating connection due to administrator command (57P01)".
 * A COMMIT that fails this way may or may not have committed: callers
 * retry with their idempotency key.
 */
export function connectionLostError(dbName: string, loss: { message: string; code: string | undefined; error: Error }): ConnectError {
  const code = loss.code !== undefined ? ` (${loss.code})` : "";
  return new ConnectError(`${dbName}: connection lost: ${loss.message}${code}`, Code.Unavailable, undefined, unavailableDetails(dbName), loss.error);
}

/**
 * A write refused because the server takes none (25006), in a transaction
 * that did not ask to be read-only: the connection reached a standby (an
 * HA failover moved the primary, and this connection, or the address it
 * was opened to, still points at the old one) or a server set read-only
 * (`default_transaction_read_only`). Unavailable: the request is fine and
 * may succeed once a writable primary answers, so the edge retries it with
 * its idempotency key, and the connection is closed rather than pooled
 * (ScopedTx) so that the next one is opened afresh. In a transaction that
 * asked to be read-only the same error is the caller's bug, and stays as
 * it is. Undefined for any other error.
 */
export function readOnlyServerError(err: unknown, dbName: string): ConnectError | undefined {
  if (codeOf(err) !== READ_ONLY_SQLSTATE) return undefined;
  return new ConnectError(
    `${dbName}: database unavailable: the server takes no writes (a standby, or set read-only) (${READ_ONLY_SQLSTATE})`,
    Code.Unavailable,
    undefined,
    unavailableDetails(dbName),
    err,
  );
}

/** ErrorInfo DATABASE_UNAVAILABLE naming the database (docs/errors.md): the request is fine, the database is not. */
export function unavailableDetails(dbName: string): Detail[] {
  return refusalDetails({ reason: "DATABASE_UNAVAILABLE", metadata: { database: dbName } });
}
