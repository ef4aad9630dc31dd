import assert from "node:assert/strict";
import { test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { mailerV1 } from "@platform/proto";
import { currentScope, remainingMs } from "@platform/resilience";
import { type DeliverDeps, deliverBatch } from "./deliver-batch.js";

const ids = ["6f1c2d3e-4a5b-4c6d-8e9f-0a1b2c3d4e51", "6f1c2d3e-4a5b-4c6d-8e9f-0a1b2c3d4e52", "6f1c2d3e-4a5b-4c6d-8e9f-0a1b2c3d4e53"];
const claimed = (attempts = 1) => ids.map((orderId) => ({ orderId, attempts }));
const always = { startBefore: Number.POSITIVE_INFINITY, stopping: () => false };

/** A mailer answering from `answers` in call order ("ok" or "fail"), recording each call's key and its deadline's remaining time. */
function mailer(answers: Array<"ok" | "fail">) {
  const calls: Array<{ key: string; remainingMs: number }> = [];
  const deps: DeliverDeps = {
    mailer: {
      async sendReceipt(req) {
        calls.push({ key: req.idempotencyKey ?? "", remainingMs: remainingMs(currentScope()!) });
        if (answers.shift() === "fail") throw new ConnectError("mailer down", Code.Unavailable);
        return create(mailerV1.SendReceiptResponseSchema, { messageId: `m-${req.orderId}` });
      },
    },
    schedule: { baseMs: 1000, capMs: 60_000, maxAttempts: 3 },
    sendTimeoutMs: 5000,
    concurrency: 1,
    random: () => 0.5,
  };
  return { deps, calls };
}

test("each receipt is sent with its order id as the mailer's idempotency key, under a deadline of its own", async () => {
  const m = mailer(["ok", "ok", "ok"]);
  const d = await deliverBatch(m.deps, claimed(), always);
  assert.deepEqual(
    m.calls.map((c) => c.key),
    ids,
  );
  for (const c of m.calls) assert.ok(c.remainingMs > 4900 && c.remainingMs <= 5000, `each send starts with its whole deadline (${c.remainingMs} ms)`);
  assert.deepEqual(
    d.outcomes,
    ids.map((orderId) => ({ kind: "sent", orderId, attempts: 1, messageId: `m-${orderId}` })),
  );
  assert.equal(d.failed, false);
});

test("a send that never answers ends at its own deadline and is retried later", async () => {
  const deps: DeliverDeps = {
    ...mailer([]).deps,
    sendTimeoutMs: 50,
    mailer: {
      sendReceipt: () =>
        new Promise((_, reject) =>
          currentScope()!.signal.addEventListener("abort", () => reject(new ConnectError("deadline exceeded", Code.DeadlineExceeded)), { once: true }),
        ),
    },
  };
  // The scope's own timer does not hold the process open (unref): this one does, meanwhile.
  const keepAlive = setTimeout(() => {}, 5000);
  const d = await deliverBatch(deps, claimed().slice(0, 1), always).finally(() => clearTimeout(keepAlive));
  assert.deepEqual(d.outcomes, [{ kind: "retry", orderId: ids[0], attempts: 1, error: "[deadline_exceeded] deadline exceeded", delayMs: 500 }]);
});

test("after a failed send no further send of the batch starts: the rest is released unattempted", async () => {
  const m = mailer(["ok", "fail", "ok"]);
  const d = await deliverBatch(m.deps, claimed(), always);
  assert.equal(m.calls.length, 2);
  assert.equal(d.failed, true);
  assert.deepEqual(
    d.outcomes.map((o) => o.kind),
    ["sent", "retry", "released"],
  );
});

test("a failure is retried after a jittered delay within the budget; the budget's last attempt failing fails the receipt", async () => {
  // random 0.5: half the ceiling, which doubles with each attempt (1000 ms after the first).
  const second = await deliverBatch(mailer(["fail"]).deps, [{ orderId: ids[0]!, attempts: 2 }], always);
  assert.deepEqual(second.outcomes, [{ kind: "retry", orderId: ids[0], attempts: 2, error: "[unavailable] mailer down", delayMs: 1000 }]);
  const last = await deliverBatch(mailer(["fail"]).deps, [{ orderId: ids[0]!, attempts: 3 }], always);
  assert.deepEqual(last.outcomes, [{ kind: "failed", orderId: ids[0], attempts: 3, error: "[unavailable] mailer down" }]);
});

test("no send starts once the relay stops, nor past the batch's last start (its lease would end first)", async () => {
  const stopping = mailer(["ok", "ok", "ok"]);
  let calls = 0;
  const d = await deliverBatch(stopping.deps, claimed(), { startBefore: Number.POSITIVE_INFINITY, stopping: () => calls++ >= 1 });
  assert.deepEqual(
    d.outcomes.map((o) => o.kind),
    ["sent", "released", "released"],
  );
  const late = mailer(["ok"]);
  const l = await deliverBatch({ ...late.deps, now: () => 10 }, claimed(), { startBefore: 10, stopping: () => false });
  assert.deepEqual([late.calls.length, l.failed], [0, false]);
  assert.deepEqual(
    l.outcomes.map((o) => o.kind),
    ["released", "released", "released"],
  );
});
