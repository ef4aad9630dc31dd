import { Code, ConnectError } from "@connectrpc/connect";
import { type CallScope, abortReason } from "@platform/resilience";

/**
 * The error for work we did not start (or finish) because the scope ended
 * first, by why it ended. `what` completes "... before <what>".
 */
export function scopeEndedError(dbName: string, scope: CallScope, what: string): ConnectError {
  switch (abortReason(scope)) {
    case "cancelled":
      return new ConnectError(`${dbName}: caller went away before ${what}`, Code.Canceled);
    case "shutdown":
      return new ConnectError(`${dbName}: server shutting down before ${what}`, Code.Unavailable);
    default:
      return new ConnectError(`${dbName}: deadline exceeded before ${what}`, Code.DeadlineExceeded);
  }
}
