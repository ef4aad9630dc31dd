/**
 * A flood of watchers against the shipped defaults (a platform of this
 * file's own: the flood holds the loopback caller's whole stream allowance):
 * 150 WatchOrder streams from one client, of which the gateway's per-caller
 * stream limit (STREAM_MAX_PER_CALLER, 100) keeps 100 open at every hop and
 * refuses the rest RESOURCE_EXHAUSTED with pushback; meanwhile PlaceOrder
 * and GetOrder calls, as many at once as the gateway's unary admission
 * holds, all succeed. Then the client leaves and nothing stays open.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { checkoutV1 } from "@platform/proto";
import { eventually, insertHeldOrders, metricValue, startTestPlatform, type TestPlatform } from "@platform/test-support";

let p: TestPlatform;
before(async () => {
  p = await startTestPlatform();
});
after(async () => {
  await p?.close();
});

const hops = ["gateway", "checkout", "orders"] as const;
const openStreams = () => Promise.all(hops.map(async (s) => metricValue(await p.metrics(s), "rpc_server_streams_open")));

test("150 watchers from one client: 100 open at every hop, 50 refused with pushback, and every unary call meanwhile succeeds", async () => {
  const id = randomUUID();
  await insertHeldOrders(p.sql, [id], "watch-flood");
  // The watchers on their own connection, as another browser tab would be.
  const watchers = createClient(checkoutV1.CheckoutService, createGrpcTransport({ baseUrl: p.gatewayUrl }));
  const abort = new AbortController();
  // Opened 25 at a time: an open holds a slot of the gateway's WatchOrder bulkhead toward checkout
  // until checkout answers (64 slots, 32 queued: service.json), so a burst of more opens than that at
  // the same instant is refused UNAVAILABLE with pushback, as unary calls are; the limit under test here
  // is the one on streams that stay open.
  const outcomes: { open?: AsyncIterator<checkoutV1.WatchOrderResponse>; error?: ConnectError }[] = [];
  for (let wave = 0; wave < 6; wave++) {
    outcomes.push(
      ...(await Promise.all(
        Array.from({ length: 25 }, async () => {
          const it = watchers.watchOrder({ orderId: id }, { signal: abort.signal })[Symbol.asyncIterator]();
          try {
            await it.next();
            return { open: it };
          } catch (e) {
            return { error: ConnectError.from(e) };
          }
        }),
      )),
    );
  }
  const refused = outcomes.flatMap((o) => (o.error ? [o.error] : []));
  assert.equal(
    outcomes.length - refused.length,
    100,
    `open streams; refused: ${[...new Set(refused.map((e) => `${Code[e.code]} ${e.rawMessage}`))].join("; ")}`,
  );
  assert.equal(refused.length, 50);
  for (const e of refused) {
    assert.equal(e.code, Code.ResourceExhausted, e.rawMessage);
    assert.ok(Number(e.metadata.get("grpc-retry-pushback-ms")) > 0, "a pushback hint");
  }
  assert.deepEqual(await openStreams(), [100, 100, 100]);
  assert.equal((await p.sql<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'orders-change-feed'"))[0]!.n, 1);

  // Unary calls while the watchers stay open: 8 at a time, 80 in all.
  const unary = p.client("grpc");
  const results: (Code | "ok")[] = [];
  for (let round = 0; round < 10; round++) {
    results.push(
      ...(await Promise.all(
        Array.from({ length: 8 }, async (_, i) => {
          try {
            if (i % 2 === 0) await unary.placeOrder({ customerId: "watch-flood", items: [{ sku: "MUG-CERAMIC", quantity: 1 }] }, { timeoutMs: 3000 });
            else await unary.getOrder({ orderId: id }, { timeoutMs: 3000 });
            return "ok" as const;
          } catch (e) {
            return ConnectError.from(e).code;
          }
        }),
      )),
    );
  }
  assert.deepEqual(
    results.filter((r) => r !== "ok"),
    [],
    "every unary call succeeded",
  );
  assert.deepEqual(await openStreams(), [100, 100, 100], "the watchers stayed open");

  abort.abort();
  await Promise.all(outcomes.map((o) => o.open?.next().catch(() => {})));
  await eventually(async () => (await openStreams()).every((n) => n === 0), "every hop's streams ended");
  await eventually(
    async () => (await p.sql<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'orders-change-feed'"))[0]!.n === 0,
    "orders left LISTEN",
  );
});
