import type pg from "pg";
import { type ConnectionSlots, SlotWaitError } from "./connection-slots.js";
import type { ReconnectGate } from "./reconnect-gate.js";

/**
 * Takes a slot, then a connection, within `waitBudgetMs` and until `signal`
 * aborts. Rejects with a `SlotWaitError` when it gives up, or with the
 * pool's error when connecting fails. While `gate` is down (the server
 * refuses connections), the slot's holder waits there before it connects,
 * rejecting with a `ReconnectWaitError` when it gives up: the slots queue
 * everyone else, so only the probe connects meanwhile. That wait, and the
 * wait for a slot behind a gate that is down, are parked (`park`, the
 * request's CallScope.park): a request waiting out its database's restart
 * uses nothing of its server, and its server's admission does not count it.
 *
 * pg-pool's `connect()` cannot be cancelled, and opening a new connection
 * can hang (a blackholed server). When we stop waiting for one, the slot
 * stays taken until that connect settles; the connection, if it arrives, goes
 * straight back to the pool. Nothing leaks, and the pool never exceeds its
 * size.
 */
export async function acquireConnection(
  pool: pg.Pool,
  slots: ConnectionSlots,
  signal: AbortSignal,
  waitBudgetMs: number,
  gate?: ReconnectGate,
  park?: () => () => void,
): Promise<pg.PoolClient> {
  const started = performance.now();
  // Behind a gate that is down, the wait for a slot is part of the restart's
  // wait too: the slots' holders wait at the gate, and this request behind
  // them, until it has its slot (the restart's backlog drains first).
  let unpark = gate?.down ? park?.() : undefined;
  try {
    await slots.acquire(signal, waitBudgetMs);
    if (gate?.down) {
      unpark ??= park?.();
      try {
        await gate.wait(signal, waitBudgetMs - (performance.now() - started));
      } catch (err) {
        slots.release();
        throw err;
      }
    }
  } finally {
    unpark?.();
  }
  const connecting = pool.connect();
  const left = waitBudgetMs - (performance.now() - started);
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const giveUp = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new SlotWaitError("timeout")), Math.max(0, left));
    onAbort = () => reject(new SlotWaitError("aborted"));
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([connecting, giveUp]);
  } catch (err) {
    if (err instanceof SlotWaitError) {
      connecting.then(
        (client) => {
          client.release();
          slots.release();
        },
        () => slots.release(),
      );
    } else {
      slots.release();
    }
    throw err;
  } finally {
    clearTimeout(timer);
    if (onAbort) signal.removeEventListener("abort", onAbort);
  }
}
