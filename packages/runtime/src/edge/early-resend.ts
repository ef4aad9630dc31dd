import { grpcRetryPushbackHeader } from "@platform/resilience";
import { serviceCounter } from "../observability/metrics.js";

/**
 * Pushback a connection ignores is enforced on that connection.
 *
 * Every refusal with a pushback hint tells its client when to come back.
 * An HTTP/1.1 connection carries one request at a time, so a request that
 * arrives on it before that time comes from a client that did not wait. A
 * flood of such clients (a closed loop that resends at once) makes the edge
 * spend its CPU on refusals, taken from the work it admitted: at 256
 * connections against a platform that peaks at 64, intake refusals at 1,700
 * a second held goodput at 58 % of the peak.
 *
 * So the refusal of a request that came early is answered at the time its
 * connection was told, not at once: at most `maxHoldMs` (1 s) later, and
 * never later than its deadline less a margin to reach the client. A
 * connection then costs the edge at most two refusals per pushback period
 * (of up to a second), whatever its client does; a longer pushback (a rate
 * limit's minutes) is the client's to honour, not the edge's to sit out. A client that
 * honours pushback is never held: its next request arrives after the time
 * it was given. HTTP/2 connections multiplex many callers (a backend for
 * many users), so one caller's early resend says nothing about the others
 * on its connection: they are not held.
 */
export class EarlyResendHold {
  /** Per HTTP/1.1 connection: when its client was told to come back, on performance.now()'s scale. */
  private readonly comeBackAt = new WeakMap<object, number>();
  private readonly held = serviceCounter(
    "edge_refusals_held_total",
    "Refusals answered at the time their connection was told to come back, because its client resent before it (HTTP/1.1).",
    [],
  );

  /**
   * A refusal is about to be answered: how long to hold it (0: at once).
   * Notes the time this refusal's hint tells the connection to come back.
   */
  holdMs(
    connection: { readonly httpVersionMajor: number; readonly socket: object | null },
    metadata: Headers,
    deadlineAt: number,
    now = performance.now(),
  ): number {
    if (connection.httpVersionMajor !== 1 || connection.socket === null) return 0;
    const told = this.comeBackAt.get(connection.socket);
    if (told !== undefined && told > now) {
      const holdMs = Math.min(told - now, maxHoldMs, deadlineAt - now - answerMarginMs);
      if (holdMs <= 0) return 0;
      this.held.inc();
      return holdMs;
    }
    const hintMs = Number(metadata.get(grpcRetryPushbackHeader));
    if (Number.isFinite(hintMs) && hintMs > 0) this.comeBackAt.set(connection.socket, now + hintMs);
    return 0;
  }
}

/** The longest a refusal is held: enough to bound a flood's refusals to one a second per connection. */
const maxHoldMs = 1000;
/** A held refusal is answered this long before the request's deadline, so the client reads the refusal, not its own timeout. */
const answerMarginMs = 50;
