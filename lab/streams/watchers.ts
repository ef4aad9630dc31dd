import { randomUUID } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { checkoutV1 } from "@platform/proto";
import pg from "pg";
import { insertHeldOrders } from "@platform/test-support";
import type { LabPlatform } from "../platform/lab-platform.js";

/**
 * The watchers scenario's trigger: `count` WatchOrder streams opened
 * through the gateway (as many browser tabs following their orders), each
 * on an order of its own whose receipt is not due for an hour, so that they
 * stay open and idle, and closed again at the trigger's end. Opened 25 at a
 * time, as tabs arrive, not in one instant. What the gateway refused (its
 * stream limit per caller: the lab is one client address) is counted.
 */
export function openWatchers(count: number): {
  start(p: LabPlatform): Promise<void>;
  stop(p: LabPlatform): Promise<void>;
  stats(): { open: number; refused: number };
} {
  let abort: AbortController | undefined;
  let open = 0;
  let refused = 0;
  return {
    stats: () => ({ open, refused }),
    async start(p) {
      abort = new AbortController();
      const signal = abort.signal;
      const db = new pg.Client({ connectionString: p.databaseUrl });
      await db.connect();
      const ids = Array.from({ length: count }, () => randomUUID());
      try {
        await insertHeldOrders((text, values) => db.query(text, values), ids, "storm-watcher");
      } finally {
        await db.end();
      }
      // A connection of their own, apart from the load's users.
      const client = createClient(checkoutV1.CheckoutService, createGrpcTransport({ baseUrl: p.gatewayUrl }));
      for (let i = 0; i < ids.length; i += 25) {
        await Promise.all(
          ids.slice(i, i + 25).map(async (orderId) => {
            const it = client.watchOrder({ orderId }, { signal })[Symbol.asyncIterator]();
            try {
              await it.next();
              open++;
              // Held open, reading heartbeats, until the trigger ends.
              void (async () => {
                try {
                  while (!(await it.next()).done) {}
                } catch {}
              })();
            } catch {
              if (!signal.aborted) refused++;
            }
          }),
        );
      }
    },
    async stop() {
      abort?.abort();
      abort = undefined;
    },
  };
}
