/**
 * The receipts outbox end to end (docs/outbox.md): the platform as
 * `npm start` runs it, with the receipts worker and the mailer as their own
 * processes, on the embedded PostgreSQL. Orders writes each receipt in the
 * order's own transaction; the worker's relay claims receipts in batches
 * and sends each through the mailer later, with its own deadline, jittered
 * retries and a budget of attempts; each receipt goes out once, even when
 * the worker is killed in the middle of a batch.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { checkoutV1 } from "@platform/proto";
import { expectCode, eventually, metricValue, setServiceFaults, startTestPlatform, type TestPlatform } from "@platform/test-support";

let p: TestPlatform;

/** Attempts per receipt in this file, and short backoffs, so that retries and the budget are seen within a test. */
const maxAttempts = 3;
/** A short lease, so that the receipts of a killed worker are claimed again within a test. */
const leaseMs = 2000;

before(async () => {
  p = await startTestPlatform({
    faultInjection: true,
    serviceEnv: {
      receipts: {
        RECEIPTS_MAX_ATTEMPTS: String(maxAttempts),
        RECEIPTS_BACKOFF_BASE_MS: "50",
        RECEIPTS_BACKOFF_CAP_MS: "200",
        RECEIPTS_PAUSE_AFTER_FAILURE_MS: "100",
        RECEIPTS_POLL_INTERVAL_MS: "50",
        RECEIPTS_LEASE_MS: String(leaseMs),
        RECEIPTS_SEND_TIMEOUT_MS: "1000",
        RECEIPTS_STATEMENT_TIMEOUT_MS: "300",
      },
    },
  });
});
after(async () => {
  await p?.close();
});

const client = () => p.client("connect-json");
const place = (headers: Record<string, string> = {}) =>
  client().placeOrder({ customerId: "receipts-e2e", items: [{ sku: "MUG-CERAMIC", quantity: 1 }] }, { headers, timeoutMs: 5000 });

async function receiptOf(orderId: string): Promise<checkoutV1.Receipt | undefined> {
  return (await client().getOrder({ orderId }, { timeoutMs: 5000 })).order?.receipt;
}

async function mailerSent(outcome: "sent" | "duplicate"): Promise<number> {
  return metricValue(await p.metrics("mailer"), "mailer_receipts_total", { outcome });
}

async function deliveries(outcome: string): Promise<number> {
  return metricValue(await p.metrics("receipts"), "receipts_deliveries_total", { outcome });
}

async function waitForState(orderId: string, state: checkoutV1.ReceiptState): Promise<checkoutV1.Receipt> {
  let last: checkoutV1.Receipt | undefined;
  await eventually(
    async () => (last = await receiptOf(orderId))?.state === state,
    `receipt of ${orderId} ${checkoutV1.ReceiptState[state]} (last: ${JSON.stringify(last)})`,
    200,
    50,
  );
  return last!;
}

/** Orders without exactly one receipt row, and receipt rows without a committed order. */
async function outboxMismatches() {
  const [row] = await p.sql<{ without_receipt: number; orphan_receipts: number }>(
    `SELECT (SELECT count(*) FROM orders.orders o WHERE NOT EXISTS (SELECT 1 FROM receipts.receipts r WHERE r.order_id = o.id))::int AS without_receipt,
            (SELECT count(*) FROM receipts.receipts r WHERE NOT EXISTS (SELECT 1 FROM orders.orders o WHERE o.id = r.order_id))::int AS orphan_receipts`,
  );
  return row;
}

describe("the outbox: the receipt is written in the order's transaction", () => {
  test("PlaceOrder answers with the receipt pending; the worker sends it once and GetOrder says so", async () => {
    const sentBefore = await mailerSent("sent");
    const { order } = await place();
    assert.ok(order);
    assert.deepEqual([order.receipt?.state, order.receipt?.attempts], [checkoutV1.ReceiptState.PENDING, 0]);
    const receipt = await waitForState(order.id, checkoutV1.ReceiptState.SENT);
    assert.equal(receipt.attempts, 1);
    assert.equal((await mailerSent("sent")) - sentBefore, 1, "one receipt went out");
    const rows = await p.sql<{ state: string; message_id: string | null }>("SELECT state, message_id FROM receipts.receipts WHERE order_id = $1", [order.id]);
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.state, "sent");
    assert.ok(rows[0]!.message_id, "the mailer's message id is kept");
  });

  test("an order whose transaction rolls back leaves no receipt; every committed order has exactly one", async () => {
    // The same key with another request: orders' one statement writes the
    // order, its lines and its receipt, finds the key taken, and rolls all
    // of it back (ALREADY_EXISTS).
    const key = `receipts-e2e-${randomUUID()}`;
    const first = await place({ "Idempotency-Key": key });
    const receiptsBefore = (await p.sql<{ n: number }>("SELECT count(*)::int AS n FROM receipts.receipts"))[0]!.n;
    await expectCode(
      client().placeOrder(
        { customerId: "receipts-e2e", items: [{ sku: "MUG-CERAMIC", quantity: 5 }] },
        { headers: { "Idempotency-Key": key }, timeoutMs: 5000 },
      ),
      Code.AlreadyExists,
      /already used/,
    );
    // A replay is answered from the store: no second receipt either.
    const replay = await place({ "Idempotency-Key": key });
    assert.equal(replay.order?.id, first.order?.id);
    assert.equal((await p.sql<{ n: number }>("SELECT count(*)::int AS n FROM receipts.receipts"))[0]!.n, receiptsBefore);
    assert.deepEqual(await outboxMismatches(), { without_receipt: 0, orphan_receipts: 0 });
  });

  test("orders may call the receipts interface and nothing else of the receipts schema", async () => {
    const [row] = await p.sql<{ enqueue: boolean; status: boolean; write_receipts: boolean; read_receipts: boolean }>(
      `SELECT has_function_privilege('orders', 'receipts.enqueue_receipt(uuid)', 'EXECUTE') AS enqueue,
              has_function_privilege('orders', 'receipts.receipt_status(uuid)', 'EXECUTE') AS status,
              has_table_privilege('orders', 'receipts.receipts', 'INSERT, UPDATE, DELETE') AS write_receipts,
              has_table_privilege('orders', 'receipts.receipts', 'SELECT') AS read_receipts`,
    );
    assert.deepEqual(row, { enqueue: true, status: true, write_receipts: false, read_receipts: false });
  });
});

describe("the worker: each receipt once, retried with a budget", () => {
  test("a receipt delivered again after it was sent (put back by hand) sends nothing new: the mailer's key answers the first message", async () => {
    const { order } = await place();
    await waitForState(order!.id, checkoutV1.ReceiptState.SENT);
    const [first] = await p.sql<{ message_id: string }>("SELECT message_id FROM receipts.receipts WHERE order_id = $1", [order!.id]);
    const sentBefore = await mailerSent("sent");
    const duplicatesBefore = await mailerSent("duplicate");
    await p.sql("UPDATE receipts.receipts SET state = 'pending', message_id = NULL, sent_at = NULL WHERE order_id = $1", [order!.id]);
    await waitForState(order!.id, checkoutV1.ReceiptState.SENT);
    assert.equal((await mailerSent("sent")) - sentBefore, 0);
    assert.equal((await mailerSent("duplicate")) - duplicatesBefore, 1);
    const [again] = await p.sql<{ message_id: string }>("SELECT message_id FROM receipts.receipts WHERE order_id = $1", [order!.id]);
    assert.equal(again!.message_id, first!.message_id, "the first message's id");
  });

  test("the worker killed (SIGKILL) in the middle of a batch: restarted, it sends every receipt, each exactly once", async () => {
    const receipts = p.services.receipts;
    const restartsBefore = receipts.process.restarts;
    // 200 ms a call, 8 at a time: a batch of 40 takes a second to send, and its outcomes are written after.
    await setServiceFaults(p, "mailer", { handler: { latencyMs: 200 } });
    try {
      const sentBefore = await mailerSent("sent");
      const duplicatesBefore = await mailerSent("duplicate");
      const orders = await Promise.all(Array.from({ length: 40 }, () => place()));
      const ids = orders.map((o) => o.order!.id);
      // Killed once the mailer has sent receipts that the database does not have as sent yet: a batch's
      // outcomes are written after its last send, so these belong to the batch in flight.
      const unrecorded = async () => {
        const mailed = (await mailerSent("sent")) - sentBefore;
        const [row] = await p.sql<{ n: number }>("SELECT count(*)::int AS n FROM receipts.receipts WHERE state = 'sent' AND order_id = ANY($1::uuid[])", [ids]);
        return mailed - row!.n;
      };
      await eventually(async () => (await unrecorded()) >= 4, "a batch half sent", 400, 5);
      receipts.process.kill("SIGKILL");
      // The supervisor restarts it; the killed worker's receipts are claimed again once their lease ends.
      for (const id of ids) await waitForState(id, checkoutV1.ReceiptState.SENT);
      assert.ok(receipts.process.restarts > restartsBefore, "the worker was restarted");
      assert.equal((await mailerSent("sent")) - sentBefore, ids.length, "each receipt went out exactly once");
      assert.ok((await mailerSent("duplicate")) - duplicatesBefore >= 1, "receipts mailed before the kill, and not yet recorded, were delivered again");
      const [row] = await p.sql<{ sent: number; messages: number }>(
        "SELECT count(*) FILTER (WHERE state = 'sent')::int AS sent, count(DISTINCT message_id)::int AS messages FROM receipts.receipts WHERE order_id = ANY($1::uuid[])",
        [ids],
      );
      assert.deepEqual(row, { sent: ids.length, messages: ids.length });
    } finally {
      await setServiceFaults(p, "mailer", {});
    }
  });

  test("the mailer fails twice, then recovers: retried by the relay, sent once on the third attempt", async () => {
    await setServiceFaults(p, "mailer", { handler: { errorRate: 1, times: 2 } });
    try {
      const sentBefore = await mailerSent("sent");
      const retriesBefore = await deliveries("retry_scheduled");
      const { order } = await place();
      const receipt = await waitForState(order!.id, checkoutV1.ReceiptState.SENT);
      assert.equal(receipt.attempts, 3);
      assert.equal((await deliveries("retry_scheduled")) - retriesBefore, 2);
      assert.equal((await mailerSent("sent")) - sentBefore, 1);
    } finally {
      await setServiceFaults(p, "mailer", {});
    }
  });

  test("a mailer that stays down: orders are still placed at once, and each receipt fails after its budget, unsent", async () => {
    await setServiceFaults(p, "mailer", { handler: { errorRate: 1 } });
    try {
      const sentBefore = await mailerSent("sent");
      const orders = await Promise.all([place(), place(), place()]);
      for (const { order } of orders) assert.equal(order?.receipt?.state, checkoutV1.ReceiptState.PENDING, "the order does not wait for its receipt");
      for (const { order } of orders) {
        const receipt = await waitForState(order!.id, checkoutV1.ReceiptState.FAILED);
        assert.equal(receipt.attempts, maxAttempts);
      }
      assert.equal((await mailerSent("sent")) - sentBefore, 0);
      const errors = await p.sql<{ last_error: string }>("SELECT last_error FROM receipts.receipts WHERE order_id = $1", [orders[0]!.order!.id]);
      assert.match(errors[0]!.last_error, /injected fault/);
    } finally {
      await setServiceFaults(p, "mailer", {});
    }
  });
});
