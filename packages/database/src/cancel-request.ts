import { connect } from "node:net";
import type pg from "pg";

/** Where and how to reach a backend to cancel what it is running. */
export interface CancelTarget {
  host: string;
  port: number;
  processID: number;
  secretKey: number;
}

/** Magic request code of a CancelRequest message in the PostgreSQL protocol. */
const CANCEL_REQUEST_CODE = 80877102;

/**
 * The backend key of a connected client. node-pg keeps these on the client
 * without declaring them in its types; they are what `Client.cancel` uses.
 */
export function cancelTargetOf(client: pg.ClientBase): CancelTarget | undefined {
  const c = client as unknown as Partial<Record<"host" | "port" | "processID" | "secretKey", unknown>>;
  const { host, port, processID, secretKey } = c;
  if (typeof host !== "string" || typeof port !== "number" || typeof processID !== "number" || typeof secretKey !== "number") {
    return undefined;
  }
  return { host, port, processID, secretKey };
}

/**
 * Sends a PostgreSQL CancelRequest on a fresh connection, so that the
 * backend stops the statement it is running (SQLSTATE 57014 comes back on
 * the original connection). node-pg has no AbortSignal, and its
 * `query_timeout` only stops the client from waiting while the statement
 * keeps its locks and pool slot on the server.
 *
 * We write the 16-byte message ourselves rather than use `Client.cancel()`:
 * that one emits unhandled 'error' events when the server is unreachable
 * (which would crash the process exactly during an outage) and offers no way
 * to know when it is done. A cancel request is always sent in plain text, as
 * libpq does; it carries no credentials, and the server closes the
 * connection once it has signalled the backend.
 *
 * Best effort: resolves when the server has closed the connection, on
 * error, or after `timeoutMs`; never rejects.
 */
export function sendCancelRequest(target: CancelTarget, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const socket = target.host.startsWith("/")
      ? connect({ path: `${target.host}/.s.PGSQL.${target.port}` })
      : connect({ host: target.host, port: target.port });
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    timer.unref();
    socket.on("connect", () => {
      const msg = Buffer.alloc(16);
      msg.writeInt32BE(16, 0);
      msg.writeInt32BE(CANCEL_REQUEST_CODE, 4);
      msg.writeInt32BE(target.processID, 8);
      msg.writeInt32BE(target.secretKey, 12);
      socket.end(msg);
    });
    socket.on("error", () => {}); // 'close' follows
    socket.on("close", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
