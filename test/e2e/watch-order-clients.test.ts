/**
 * WatchOrder from outside clients against the gateway: `buf curl` (gRPC
 * over h2c, with the proto schema) and @grpc/grpc-js (the gRPC project's
 * own Node client, messages encoded by @bufbuild/protobuf) each receive a
 * new order's stream, PENDING (unless the relay was quicker) then SENT, and
 * see it end OK.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { checkoutV1 } from "@platform/proto";
import { sharedPlatform, type SharedPlatform } from "@platform/test-support";

const run = promisify(execFile);
// Read-only but for its own orders (customer "watch-clients"): the run's shared platform.
let p: SharedPlatform;
before(async () => {
  p = await sharedPlatform();
});
after(async () => {
  await p?.close();
});

async function placeOrder(): Promise<string> {
  const res = await p.client("grpc").placeOrder({ customerId: "watch-clients", items: [{ sku: "MUG-CERAMIC", quantity: 1 }] }, { timeoutMs: 5000 });
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
  const { stdout } = await run(
    "npx",
    [
      "buf",
      "curl",
      "--schema",
      "proto",
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "-d",
      JSON.stringify({ orderId }),
      `${p.gatewayUrl}/checkout.v1.CheckoutService/WatchOrder`,
    ],
    { cwd: process.cwd(), timeout: 60_000 },
  );
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
