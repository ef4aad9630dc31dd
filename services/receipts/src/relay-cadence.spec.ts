/**
 * When the relay claims (src/relay.ts), on a fake clock: a full batch is
 * followed by the next claim at once, a batch that was not full or a claim
 * that found nothing by the poll interval, a failed send by the pause after
 * a failure, a failed claim by a wait that doubles from the poll interval.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { ClaimedReceipt, DeliveryOutcome } from "./receipt-statements.js";
import { startRelay } from "./relay.js";

const receipt = (n: number): ClaimedReceipt => ({ orderId: `order-${n}`, attempts: 1 });

test("the next claim comes at once after a full batch, after the poll interval otherwise, after the pause when a send failed, later and later when claims fail", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  let clock = 0;
  const claimedAt: number[] = [];
  // Each claim's answer in turn: a full batch (2), a partial one, nothing, a batch whose send fails, two failed claims, then nothing.
  const answers: Array<ClaimedReceipt[] | "fail"> = [[receipt(1), receipt(2)], [receipt(3)], [], [receipt(4)], "fail", "fail"];
  const written: DeliveryOutcome[][] = [];
  const relay = startRelay({
    batches: {
      async claim() {
        claimedAt.push(clock);
        const a = answers.shift() ?? [];
        if (a === "fail") throw new Error("database away");
        return a;
      },
      async complete(outcomes) {
        written.push([...outcomes]);
        return new Set(outcomes.map((o) => o.orderId));
      },
    },
    deliver: async (claimed) => ({
      outcomes: claimed.map((r) => ({ kind: "sent", orderId: r.orderId, attempts: r.attempts, messageId: "m" }) as const),
      failed: claimed[0]?.orderId === "order-4",
    }),
    batchSize: 2,
    leaseMs: 30_000,
    pollIntervalMs: 100,
    pauseAfterFailureMs: 1000,
    sendTimeoutMs: 5000,
    statementTimeoutMs: 1000,
    logger: { info() {}, warn() {} },
    random: () => 0.5,
    now: () => clock,
  });
  const flush = () => new Promise((r) => setImmediate(r));
  await flush();
  for (let ms = 0; ms < 1500; ms += 10) {
    t.mock.timers.tick(10);
    clock += 10;
    for (let i = 0; i < 5; i++) await flush();
  }
  // 0: full, again at once (0): partial, +100: nothing, +100: the failing send, +750 (half to all of
  // 1000, random 0.5): a failed claim, +150 (200 jittered): another, +300 (400 jittered): nothing.
  assert.deepEqual(claimedAt.slice(0, 7), [0, 0, 100, 200, 950, 1100, 1400]);
  assert.deepEqual(
    written.map((w) => w.map((o) => o.orderId)),
    [["order-1", "order-2"], ["order-3"], ["order-4"]],
  );
  const stopped = relay.stop(1000);
  t.mock.timers.tick(100);
  await stopped;
});
