/**
 * Steady order traffic for the restart tests: a few workers place orders
 * through the gateway's public API, each logical order with its own
 * customer id and Idempotency-Key, repeated (same key, same body) after an
 * uncertain failure the way a careful client would. Every call is recorded
 * with its deadline, outcome and how long it took to settle, so the tests
 * can check what callers saw and reconcile the database afterwards.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type pg from "pg";
import { protocols, type Protocol, type TestPlatform } from "@platform/test-support";
import { catalogue } from "./fuzz-cases.js";

export interface CallRecord {
  protocol: Protocol;
  /** performance.now() at the call and when it settled. */
  startedAt: number;
  settledAt: number;
  timeoutMs: number;
  code: Code | "ok";
  message: string;
}

export interface LogicalOrder {
  customerId: string;
  key: string;
  items: { sku: string; quantity: number }[];
  protocol: Protocol;
  /** Set once a call answered with the order. */
  orderId?: string;
  attempts: number;
}

/** Failures after which the order may or may not exist: the client asks again with the same key. */
const uncertain = new Set<Code>([Code.Unavailable, Code.DeadlineExceeded, Code.ResourceExhausted, Code.Canceled, Code.Internal, Code.Unknown]);

export class OrderLoad {
  readonly calls: CallRecord[] = [];
  readonly orders: LogicalOrder[] = [];
  private running = true;
  private readonly done: Promise<void>;
  /** Prefix of every customer id this load uses (no "-" or "%" in it). */
  readonly tag: string;

  constructor(
    private readonly p: TestPlatform,
    private readonly opts: { tag: string; workers: number; timeoutMs: number; maxAttempts?: number; pauseMs?: number },
  ) {
    this.tag = opts.tag;
    this.done = Promise.all(Array.from({ length: opts.workers }, (_, w) => this.worker(w))).then(() => {});
  }

  /** Calls settled since `since` (performance.now()). */
  callsSince(since: number): CallRecord[] {
    return this.calls.filter((c) => c.settledAt >= since);
  }

  successesSince(since: number): number {
    return this.calls.filter((c) => c.code === "ok" && c.settledAt >= since).length;
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }

  private async worker(w: number): Promise<void> {
    for (let i = 0; this.running; i++) {
      const protocol = protocols[(w + i) % protocols.length]!;
      const order: LogicalOrder = {
        customerId: `${this.opts.tag}-${w}-${i}`,
        key: `${this.opts.tag}-key-${w}-${i}`,
        items: [{ sku: catalogue[i % catalogue.length]!, quantity: 1 + (i % 3) }],
        protocol,
        attempts: 0,
      };
      this.orders.push(order);
      for (let a = 0; a < (this.opts.maxAttempts ?? 5) && (a === 0 || this.running); a++) {
        const code = await this.attempt(order);
        if (code === "ok" || !uncertain.has(code)) break;
        await sleep(100 * (a + 1));
      }
      await sleep(this.opts.pauseMs ?? 20);
    }
  }

  /** One call for `order`; records it and returns its outcome. */
  async attempt(order: LogicalOrder, timeoutMs = this.opts.timeoutMs): Promise<Code | "ok"> {
    order.attempts++;
    const startedAt = performance.now();
    let code: Code | "ok" = "ok";
    let message = "";
    try {
      const res = await this.p
        .client(order.protocol)
        .placeOrder({ customerId: order.customerId, items: order.items }, { headers: { "Idempotency-Key": order.key }, timeoutMs });
      if (!res.order?.id) throw new ConnectError("an empty success", Code.Internal);
      if (order.orderId !== undefined && order.orderId !== res.order.id) {
        throw new ConnectError(`the same key answered two orders: ${order.orderId} and ${res.order.id}`, Code.DataLoss);
      }
      order.orderId = res.order.id;
    } catch (e) {
      const err = ConnectError.from(e);
      code = refusedStream(err) || unsentOnClosedConnection(err) ? Code.Unavailable : err.code;
      message = err.rawMessage;
    }
    this.calls.push({ protocol: order.protocol, startedAt, settledAt: performance.now(), timeoutMs, code, message });
    return code;
  }

  /**
   * After recovery, asks again (same key, same body) for every order whose
   * outcome stayed unknown, until each has an answer; returns how many.
   * `concurrency` callers ask at once, each for its own orders in turn (an
   * overload leaves hundreds unknown, and one at a time that is seconds of
   * round trips); each order is still asked by one caller at a time.
   */
  async resolveUncertain(attempts = 20, concurrency = 1): Promise<number> {
    const pending = this.orders.filter((o) => o.orderId === undefined);
    let resolved = 0;
    const caller = async () => {
      for (let order = pending.shift(); order !== undefined; order = pending.shift()) {
        for (let a = 0; a < attempts && order.orderId === undefined; a++) {
          const code = await this.attempt(order, 5000);
          if (code !== "ok" && !uncertain.has(code)) break;
          if (code !== "ok") await sleep(250);
        }
        if (order.orderId !== undefined) resolved++;
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, concurrency) }, caller));
    return resolved;
  }
}

/**
 * The database against the load's record: every logical order exactly once,
 * with the id its caller was given, and every order row complete.
 * Returns the problems found (empty when all is well).
 */
export async function reconcile(db: pg.Client, load: OrderLoad): Promise<string[]> {
  const problems: string[] = [];
  const { rows } = await db.query<{ id: string; customer_id: string; items: string }>(
    `SELECT o.id, o.customer_id, count(i.order_id) AS items
       FROM orders.orders o LEFT JOIN orders.order_items i ON i.order_id = o.id
      WHERE o.customer_id LIKE $1 GROUP BY o.id, o.customer_id`,
    [`${load.tag}-%`],
  );
  const byCustomer = new Map<string, { id: string; items: number }[]>();
  for (const r of rows) byCustomer.set(r.customer_id, [...(byCustomer.get(r.customer_id) ?? []), { id: r.id, items: Number(r.items) }]);
  for (const o of load.orders) {
    const stored = byCustomer.get(o.customerId) ?? [];
    byCustomer.delete(o.customerId);
    if (stored.length > 1) problems.push(`${o.customerId}: ${stored.length} orders for one logical order (key ${o.key})`);
    if (o.orderId === undefined) {
      if (stored.length > 0) problems.push(`${o.customerId}: stored as ${stored[0]!.id} but never acknowledged`);
      continue;
    }
    if (!stored.some((s) => s.id === o.orderId)) problems.push(`${o.customerId}: acknowledged order ${o.orderId} is not in the database`);
    for (const s of stored) if (s.items === 0) problems.push(`${o.customerId}: order ${s.id} has no items (half-written)`);
  }
  for (const [customer] of byCustomer) problems.push(`${customer}: an order nobody placed`);
  return problems;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Calls that settled later than their deadline plus `slackMs` (a bound against hangs, not a speed claim), described. */
export function lateCalls(calls: CallRecord[], slackMs: number): string[] {
  return calls
    .filter((c) => c.settledAt - c.startedAt > c.timeoutMs + slackMs)
    .map((c) => `${c.protocol} ${codeName(c.code)} after ${Math.round(c.settledAt - c.startedAt)} ms (deadline ${c.timeoutMs} ms): ${c.message}`);
}

/**
 * A stream the server refused (RST_STREAM or GOAWAY with REFUSED_STREAM: by
 * the HTTP/2 spec never processed, safe to retry), which connect-node's client
 * reports as INTERNAL: node emits the stream's "error" before its "close",
 * and connect-node maps the reset code to UNAVAILABLE only in "close". grpc-js
 * reports it as UNAVAILABLE; so do the platform's own clients
 * (packages/runtime/src/client/downstream-error.ts). Seen once at a gateway SIGTERM:
 * a call the client sent after the gateway's shutdown notice left and before
 * it arrived, dropped by nghttp2 because node's goaway() was the notice
 * (fixed in packages/runtime/src/server/listen.ts `closeGracefully`, docs/hardening.md);
 * a session cut at serve()'s drain bound can still refuse one.
 */
function refusedStream(err: ConnectError): boolean {
  return err.code === Code.Internal && /NGHTTP2_REFUSED_STREAM/.test(err.rawMessage);
}

/**
 * HTTP/1.1's counterpart of a refused stream: it has no way to refuse a
 * request, so a request written on a keep-alive connection that a stopping
 * gateway has just closed fails in the client before it is sent ("write
 * EPIPE", which connect-node reports as INTERNAL). Nothing ran, and a careful
 * client retries it on a new connection (RFC 9112, section 9.3.1). The race
 * cannot be avoided, only placed (packages/runtime/src/server/listen.ts,
 * closeIdle); it showed up here about once in ten full runs.
 */
function unsentOnClosedConnection(err: ConnectError): boolean {
  return err.code === Code.Internal && /^write EPIPE$/.test(err.rawMessage);
}

/** Calls whose outcome is not one of `allowed`, described. */
export function unexpected(calls: CallRecord[], allowed: Set<CallRecord["code"]>): string[] {
  return calls.filter((c) => !allowed.has(c.code)).map((c) => `${c.protocol} ${codeName(c.code)}: ${c.message}`);
}

/** A call's outcome by name: "ok" or the Code's name. */
export function codeName(c: CallRecord["code"]): string {
  return c === "ok" ? "ok" : Code[c];
}

/** Calls counted by outcome, as JSON for a log line. */
export function histogram(calls: CallRecord[]): string {
  const h = new Map<string, number>();
  for (const c of calls) h.set(codeName(c.code), (h.get(codeName(c.code)) ?? 0) + 1);
  return JSON.stringify(Object.fromEntries(h));
}
