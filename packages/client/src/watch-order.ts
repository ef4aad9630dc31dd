import type { WatchOrderResponse } from "./gen/checkout/v1/checkout_pb.js";

/** The part of a Connect client of CheckoutService that watchOrder needs. */
export interface OrderWatcher {
  watchOrder(request: { orderId: string; resumeAfter?: bigint }, options?: { signal?: AbortSignal; timeoutMs?: number }): AsyncIterable<WatchOrderResponse>;
}

export interface WatchOrderOptions {
  /** Ends the watch (the stream is cancelled at every hop). */
  signal?: AbortSignal;
  /** Reconnects in a row that bring no new message before the watch gives up with the last error (default 5). */
  maxReconnects?: number;
  /** The wait before a reconnect, doubled by each one in a row without progress (default 500 ms). */
  reconnectDelayMs?: number;
  /** Told of each reconnect, with the error that ended the stream before it. */
  onReconnect?: (error: unknown, resumeAfter: bigint) => void;
}

// Connect's codes, by number: this package depends on no Connect runtime.
const deadlineExceeded = 4;
const resourceExhausted = 8;
const unavailable = 14;

/**
 * An order's changes as an async iterable that survives the end of a
 * stream: the order as it is, then each change, each exactly once. The
 * platform ends a stream at its lifetime, at a server's shutdown or when a
 * connection is lost, saying so (UNAVAILABLE, RESOURCE_EXHAUSTED, or
 * DEADLINE_EXCEEDED with the `stream-resume` trailer); this reconnects
 * then with `resumeAfter` set to the last position received, so nothing
 * is missed and nothing comes twice. Heartbeats (messages without an
 * order) are skipped. It ends when the order's receipt is final.
 *
 * ```ts
 * for await (const { order } of watchOrder(createClient(CheckoutService, transport), orderId)) {
 *   console.log(order?.receipt?.state);
 * }
 * ```
 */
export async function* watchOrder(client: OrderWatcher, orderId: string, options: WatchOrderOptions = {}): AsyncGenerator<WatchOrderResponse> {
  const maxReconnects = options.maxReconnects ?? 5;
  const delayMs = options.reconnectDelayMs ?? 500;
  let resumeAfter = 0n;
  let failedInARow = 0;
  for (;;) {
    const before = resumeAfter;
    try {
      for await (const m of client.watchOrder({ orderId, resumeAfter }, options.signal ? { signal: options.signal } : {})) {
        if (m.order === undefined) continue;
        resumeAfter = m.position;
        yield m;
      }
      return;
    } catch (e) {
      if (resumeAfter > before) failedInARow = 0;
      if (options.signal?.aborted || !resumable(e) || failedInARow >= maxReconnects) throw e;
      options.onReconnect?.(e, resumeAfter);
      await sleep(delayMs * 2 ** failedInARow, options.signal);
      failedInARow++;
    }
  }
}

/** The platform ended the stream and says it may be resumed; any other error is the caller's to see. */
function resumable(e: unknown): boolean {
  const { code, metadata } = e as { code?: unknown; metadata?: { get(name: string): string | null } };
  if (code === unavailable || code === resourceExhausted) return true;
  return code === deadlineExceeded && metadata?.get("stream-resume") != null;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
