/**
 * WatchOrder end to end, through gateway -> checkout -> orders on the
 * platform as `npm start` runs it: a placed order's receipt seen turning
 * from PENDING to SENT live; a held order (its receipt not due for an hour,
 * written here under ids of this file's own) whose change this file commits
 * itself; every hop's stream gone, and orders' LISTEN connection closed,
 * once the client leaves or the deadline passes (counted on the servers:
 * their open-stream gauges and pg_stat_activity); a resumed stream that
 * misses and repeats nothing; `buf curl` and grpc-js receive the stream.
 * One file, so that the open-stream counts are this file's alone on the
 * run's shared platform.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { OrderWatcher } from "@platform/client";
import { checkoutV1 } from "@platform/proto";
import {
  bufCurl,
  buildClientPackage,
  eventually,
  insertHeldOrders,
  metricValue,
  protocols,
  sendHeldReceipt,
  sharedPlatform,
  type SharedPlatform,
} from "@platform/test-support";

let p: SharedPlatform;
/** @platform/client's, imported once its package is built (its generated code is the build's copy). */
let watchOrder: typeof import("@platform/client").watchOrder;
before(async () => {
  await buildClientPackage();
  ({ watchOrder } = await import("@platform/client"));
  p = await sharedPlatform();
});
after(async () => {
  await p?.close();
});

const hops = ["gateway", "checkout", "orders"] as const;

/** Streams open at each hop, from its own gauge. */
async function openStreams(): Promise<number[]> {
  return Promise.all(hops.map(async (s) => metricValue(await p.metrics(s), "rpc_server_streams_open")));
}

/** orders' LISTEN connections (order-change-feed.ts names its one so). */
async function listeners(): Promise<number> {
  const rows = await p.sql<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'orders-change-feed'");
  return rows[0]!.n;
}

async function nothingLeftOpen(what: string): Promise<void> {
  await eventually(async () => (await openStreams()).every((n) => n === 0) && (await listeners()) === 0, what);
}

/** An order of this file's own whose receipt is pending and not due for an hour: nothing changes it but this file. */
async function heldOrder(): Promise<string> {
  const id = randomUUID();
  await insertHeldOrders(p.sql, [id], "watch-e2e");
  return id;
}

/** The held order's receipt sent, as the relay records it. */
const sendReceipt = (id: string) => sendHeldReceipt(p.sql, id);

const states = (msgs: checkoutV1.WatchOrderResponse[]) =>
  msgs.filter((m) => m.order).map((m) => [m.position, checkoutV1.ReceiptState[m.order!.receipt!.state]]);

describe("WatchOrder through every hop", () => {
  for (const protocol of protocols) {
    test(`${protocol}: a placed order's receipt turns from PENDING to SENT, then the stream ends OK`, async () => {
      const placed = await p.client(protocol).placeOrder({ customerId: "watch-e2e", items: [{ sku: "MUG-CERAMIC", quantity: 1 }] }, { timeoutMs: 5000 });
      const seen: checkoutV1.WatchOrderResponse[] = [];
      for await (const m of p.client(protocol).watchOrder({ orderId: placed.order!.id }, { timeoutMs: 30_000 })) seen.push(m);
      const positions = seen.filter((m) => m.order).map((m) => m.position);
      const last = seen.at(-1)!;
      assert.equal(checkoutV1.ReceiptState[last.order!.receipt!.state], "SENT");
      assert.equal(last.position, 2n);
      // The first message is the order as placed (already SENT if the relay was quicker than the watch).
      assert.deepEqual(positions, positions[0] === 1n ? [1n, 2n] : [2n]);
      assert.equal(seen[0]!.order!.id, placed.order!.id);
    });
  }

  test("a held order: the order as GetOrder shows it first, then the committed change, then the end", async () => {
    const id = await heldOrder();
    const it = p.client("grpc").watchOrder({ orderId: id }, { timeoutMs: 30_000 })[Symbol.asyncIterator]();
    const first = (await it.next()).value as checkoutV1.WatchOrderResponse;
    const got = await p.client("grpc").getOrder({ orderId: id });
    assert.deepEqual(first.order, got.order);
    assert.equal(first.position, 1n);
    await sendReceipt(id);
    const second = (await it.next()).value as checkoutV1.WatchOrderResponse;
    assert.deepEqual(states([second]), [[2n, "SENT"]]);
    assert.equal((await it.next()).done, true);
    await nothingLeftOpen("no stream at any hop, orders' LISTEN connection closed");
  });

  test("the client leaves: every hop's stream ends and orders leaves LISTEN", async () => {
    const id = await heldOrder();
    const abort = new AbortController();
    const it = p.client("grpc").watchOrder({ orderId: id }, { signal: abort.signal })[Symbol.asyncIterator]();
    assert.equal(((await it.next()).value as checkoutV1.WatchOrderResponse).position, 1n);
    assert.deepEqual(await openStreams(), [1, 1, 1], "one stream open at each hop");
    assert.equal(await listeners(), 1, "one LISTEN connection for the process's watchers");
    abort.abort();
    await assert.rejects(it.next(), (e) => ConnectError.from(e).code === Code.Canceled);
    await nothingLeftOpen("no stream at any hop, orders' LISTEN connection closed");
  });

  test("the caller's deadline ends the stream at every hop with DEADLINE_EXCEEDED", async () => {
    const id = await heldOrder();
    const seen: bigint[] = [];
    const err = await (async () => {
      try {
        for await (const m of p.client("grpc").watchOrder({ orderId: id }, { timeoutMs: 1500 })) seen.push(m.position);
      } catch (e) {
        return ConnectError.from(e);
      }
      return undefined;
    })();
    assert.deepEqual(seen, [1n]);
    assert.equal(err?.code, Code.DeadlineExceeded, `${err?.code} ${err?.rawMessage}`);
    // Whichever ends first, the caller's own timer or the hops below (each a hop reserve earlier), the code is the same.
    await nothingLeftOpen("no stream at any hop after the deadline");
  });

  test("a stream resumed after the last position it received misses nothing and repeats nothing", async () => {
    const id = await heldOrder();
    const abort = new AbortController();
    const it = p.client("connect-binary").watchOrder({ orderId: id }, { signal: abort.signal })[Symbol.asyncIterator]();
    const first = (await it.next()).value as checkoutV1.WatchOrderResponse;
    abort.abort();
    await it.next().catch(() => {});
    // The change happens while nobody watches.
    await sendReceipt(id);
    const resumed: checkoutV1.WatchOrderResponse[] = [];
    for await (const m of p.client("connect-binary").watchOrder({ orderId: id, resumeAfter: first.position }, { timeoutMs: 10_000 })) resumed.push(m);
    assert.deepEqual(states([first, ...resumed]), [
      [1n, "PENDING"],
      [2n, "SENT"],
    ]);
    // Resumed after the last position: nothing more to send, and the stream ends OK.
    const after: checkoutV1.WatchOrderResponse[] = [];
    for await (const m of p.client("connect-binary").watchOrder({ orderId: id, resumeAfter: 2n }, { timeoutMs: 10_000 })) after.push(m);
    assert.deepEqual(after, []);
  });

  test("bad requests: INVALID_ARGUMENT (the proto's rule, at the edge; a position past the last, from orders) and NOT_FOUND (from orders) through every hop", async () => {
    const drain = async (req: { orderId: string; resumeAfter?: bigint }) => {
      for await (const _ of p.client("grpc").watchOrder(req, { timeoutMs: 5000 })) {
      }
    };
    await assert.rejects(
      drain({ orderId: "nope" }),
      (e) => ConnectError.from(e).code === Code.InvalidArgument && /^order_id: must be a valid UUID/.test(ConnectError.from(e).rawMessage),
    );
    await assert.rejects(drain({ orderId: randomUUID() }), (e) => ConnectError.from(e).code === Code.NotFound);
    await assert.rejects(drain({ orderId: randomUUID(), resumeAfter: 3n }), (e) => ConnectError.from(e).code === Code.InvalidArgument);
  });

  test("@platform/client's watchOrder resumes a stream cut after its first message: each change once, then the end", async () => {
    const id = await heldOrder();
    const real = p.client("connect-binary");
    const requests: bigint[] = [];
    // The first stream's connection is lost after its first message (as a proxy or a restart would cut it).
    const cutOnce: OrderWatcher = {
      watchOrder: (req, options) => {
        requests.push(req.resumeAfter ?? 0n);
        if (requests.length > 1) return real.watchOrder(req, options);
        return (async function* () {
          const abort = new AbortController();
          for await (const m of real.watchOrder(req, { signal: abort.signal })) {
            yield m;
            abort.abort();
            await sendReceipt(id);
            throw new ConnectError("connection lost", Code.Unavailable);
          }
        })();
      },
    };
    const seen: checkoutV1.WatchOrderResponse[] = [];
    for await (const m of watchOrder(cutOnce, id, { reconnectDelayMs: 10 })) seen.push(m);
    assert.deepEqual(states(seen), [
      [1n, "PENDING"],
      [2n, "SENT"],
    ]);
    assert.deepEqual(requests, [0n, 1n], "resumed after the last position received");
  });
});

/* Outside clients: buf curl (gRPC over h2c, with the proto schema) and @grpc/grpc-js (messages encoded by @bufbuild/protobuf). */

async function placeOrder(): Promise<string> {
  const res = await p.client("grpc").placeOrder({ customerId: "watch-e2e", items: [{ sku: "MUG-CERAMIC", quantity: 1 }] }, { timeoutMs: 5000 });
  return res.order!.id;
}

/** The receipt states of a stream's messages in order, with their positions. */
function changes(messages: { position?: string | bigint; order?: { receipt?: { state?: string | number } } }[]): [string, string][] {
  return messages.map((m) => [
    String(m.position),
    typeof m.order?.receipt?.state === "number" ? String(checkoutV1.ReceiptState[m.order.receipt.state]) : String(m.order?.receipt?.state),
  ]);
}

function assertPendingThenSent(seen: [string, string][]): void {
  const sent: [string, string] = ["2", "SENT"];
  assert.deepEqual(seen, seen.length === 2 ? [["1", "PENDING"], sent] : [sent]);
}

test("buf curl streams a new order's receipt, PENDING then SENT, and exits 0 when the stream ends", async () => {
  const orderId = await placeOrder();
  const { stdout } = await bufCurl(p.gatewayUrl, "WatchOrder", { orderId });
  // buf curl prints each message as a JSON document, one after another.
  const messages = stdout
    .split(/\n(?=\{)/)
    .filter((s) => s.trim() !== "")
    .map((s) => JSON.parse(s) as { position?: string; order?: { id: string; receipt?: { state?: string } } });
  assert.ok(messages.every((m) => m.order?.id === orderId));
  assertPendingThenSent(changes(messages).map(([pos, state]) => [pos, state.replace("RECEIPT_STATE_", "")]));
});

test("grpc-js receives the stream of a new order and its OK status", async () => {
  const orderId = await placeOrder();
  const client = new grpc.Client(new URL(p.gatewayUrl).host, grpc.credentials.createInsecure());
  try {
    const { messages, status } = await new Promise<{ messages: checkoutV1.WatchOrderResponse[]; status: grpc.StatusObject }>((resolve, reject) => {
      const messages: checkoutV1.WatchOrderResponse[] = [];
      const call = client.makeServerStreamRequest(
        "/checkout.v1.CheckoutService/WatchOrder",
        (m: checkoutV1.WatchOrderRequest) => Buffer.from(toBinary(checkoutV1.WatchOrderRequestSchema, m)),
        (b: Buffer) => fromBinary(checkoutV1.WatchOrderResponseSchema, b),
        create(checkoutV1.WatchOrderRequestSchema, { orderId }),
        new grpc.Metadata(),
        { deadline: Date.now() + 30_000 },
      );
      call.on("data", (m: checkoutV1.WatchOrderResponse) => messages.push(m));
      call.on("error", () => {});
      call.on("status", (status: grpc.StatusObject) => resolve({ messages, status }));
      call.on("close", () => {});
      setTimeout(() => reject(new Error("no status within 30 s")), 30_000).unref();
    });
    assert.equal(status.code, grpc.status.OK, status.details);
    assert.ok(messages.every((m) => m.order?.id === orderId));
    assertPendingThenSent(changes(messages));
  } finally {
    client.close();
  }
});
