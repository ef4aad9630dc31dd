import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { mailerV1 } from "@platform/proto";
import { createSendReceipt, type SendReceiptDeps } from "./send-receipt.js";

const orderId = "6f1c2d3e-4a5b-4c6d-8e9f-0a1b2c3d4e5f";
const quiet = { info() {}, warn() {} };

/** The store as a map of receipts, recording each call; the mailer as a list of outcomes to give. */
function harness(opts: {
  state?: "pending" | "sent" | "failed";
  attempts?: number;
  mailer: ("ok" | "fail")[];
  maxAttempts?: number;
  pauseAfterFailureMs?: number;
}) {
  const clock = { now: 1000 };
  const waits: number[] = [];
  const receipt = { state: opts.state ?? "pending", attempts: opts.attempts ?? 0 };
  const calls: string[] = [];
  const mailerCalls: string[] = [];
  const store: SendReceiptDeps["store"] = {
    async startAttempt() {
      calls.push("startAttempt");
      if (receipt.state !== "pending") return undefined;
      return ++receipt.attempts;
    },
    async markSent(_id, messageId) {
      calls.push(`markSent ${messageId}`);
      if (receipt.state !== "pending") return false;
      receipt.state = "sent";
      return true;
    },
    async scheduleRetry(_id, error, delayMs) {
      calls.push(`scheduleRetry ${delayMs} ${error}`);
    },
    async markFailed(_id, error) {
      calls.push(`markFailed ${error}`);
      receipt.state = "failed";
      return true;
    },
  };
  const outcomes = [...opts.mailer];
  const run = createSendReceipt({
    store,
    mailer: {
      async sendReceipt(req) {
        mailerCalls.push(`${req.idempotencyKey} ${req.orderId}`);
        if (outcomes.shift() === "fail") throw new ConnectError("mailer down", Code.Unavailable);
        return create(mailerV1.SendReceiptResponseSchema, { messageId: "m-1" });
      },
    },
    schedule: { baseMs: 1000, capMs: 60_000, maxAttempts: opts.maxAttempts ?? 3 },
    jobTimeoutMs: 5000,
    pauseAfterFailureMs: opts.pauseAfterFailureMs ?? 0,
    random: () => 0.5,
    now: () => clock.now,
    sleep: async (ms) => {
      waits.push(ms);
      clock.now += ms;
    },
    logger: quiet,
  });
  return { run, receipt, calls, mailerCalls, waits, clock };
}

test("a pending receipt is sent with the order id as the mailer's idempotency key, and marked sent", async () => {
  const h = harness({ mailer: ["ok"] });
  assert.equal(await h.run({ orderId }), "sent");
  assert.deepEqual(h.mailerCalls, [`${orderId} ${orderId}`]);
  assert.deepEqual(h.calls, ["startAttempt", "markSent m-1"]);
  assert.deepEqual(h.receipt, { state: "sent", attempts: 1 });
});

test("a job that runs again for a sent or failed receipt calls nobody", async () => {
  for (const state of ["sent", "failed"] as const) {
    const h = harness({ state, attempts: 1, mailer: ["ok"] });
    assert.equal(await h.run({ orderId }), "already_done");
    assert.deepEqual(h.mailerCalls, []);
    assert.deepEqual(h.calls, ["startAttempt"]);
  }
});

test("a failure schedules the next attempt after a jittered delay, within the budget", async () => {
  const h = harness({ mailer: ["fail"] });
  assert.equal(await h.run({ orderId }), "retry_scheduled");
  // First failure: ceiling 1000 ms, random 0.5.
  assert.deepEqual(h.calls, ["startAttempt", "scheduleRetry 500 [unavailable] mailer down"]);
  const second = harness({ attempts: 1, mailer: ["fail"] });
  await second.run({ orderId });
  assert.deepEqual(second.calls.at(-1), "scheduleRetry 1000 [unavailable] mailer down", "the ceiling doubled");
});

test("the last attempt of the budget failing marks the receipt failed, with no further job", async () => {
  const h = harness({ attempts: 2, maxAttempts: 3, mailer: ["fail"] });
  assert.equal(await h.run({ orderId }), "failed");
  assert.deepEqual(h.calls, ["startAttempt", "markFailed [unavailable] mailer down"]);
  assert.deepEqual(h.receipt, { state: "failed", attempts: 3 });
});

test("a run that loses the race to mark it sent reports already_done", async () => {
  // Another run marked it sent while this one was at the mailer (which answered the same message).
  const run = createSendReceipt({
    store: {
      startAttempt: async () => 1,
      markSent: async () => false,
      scheduleRetry: async () => {},
      markFailed: async () => false,
    },
    mailer: { sendReceipt: async () => create(mailerV1.SendReceiptResponseSchema, { messageId: "m-1", duplicate: true }) },
    schedule: { baseMs: 1000, capMs: 60_000, maxAttempts: 3 },
    jobTimeoutMs: 5000,
    pauseAfterFailureMs: 0,
    logger: quiet,
  });
  assert.equal(await run({ orderId }), "already_done");
});

test("a job without a valid order id is dropped without touching the store or the mailer", async () => {
  for (const payload of [null, {}, { orderId: 42 }, { orderId: "not-a-uuid" }]) {
    const h = harness({ mailer: ["ok"] });
    assert.equal(await h.run(payload), "malformed");
    assert.deepEqual([h.calls, h.mailerCalls], [[], []]);
  }
});

test("after a failure the next run holds back (jittered) before touching the store; after a success it does not", async () => {
  const h = harness({ mailer: ["fail", "ok", "ok"], pauseAfterFailureMs: 4000 });
  await h.run({ orderId });
  assert.deepEqual(h.waits, [], "the first run did not wait");
  // random 0.5: between half and all of 4000 ms -> 3000 ms.
  await h.run({ orderId });
  assert.deepEqual(h.waits, [3000]);
  assert.deepEqual(h.calls.slice(-2), ["startAttempt", "markSent m-1"]);
  await h.run({ orderId });
  assert.deepEqual(h.waits, [3000], "a success left no pause behind");
});
