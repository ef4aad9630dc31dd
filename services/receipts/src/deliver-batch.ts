import { type Client, ConnectError } from "@connectrpc/connect";
import type { mailerV1 } from "@platform/proto";
import { createScope, runInScope } from "@platform/resilience";
import type { ClaimedReceipt, DeliveryOutcome } from "./receipt-statements.js";
import { type RetrySchedule, afterFailure } from "./retry-schedule.js";

export interface DeliverDeps {
  mailer: Pick<Client<typeof mailerV1.MailerService>, "sendReceipt">;
  schedule: RetrySchedule;
  /** One send's own deadline. */
  sendTimeoutMs: number;
  /** Sends in flight at once. */
  concurrency: number;
  /** In [0, 1): Math.random in production, fixed in tests. */
  random?: () => number;
  now?: () => number;
}

export interface BatchDelivery {
  outcomes: DeliveryOutcome[];
  /** A send failed: the relay holds back before its next claim. */
  failed: boolean;
}

/**
 * Sends a claimed batch through the mailer, `concurrency` at a time, each
 * call under its own deadline, marked sheddable, with the order id as the
 * mailer's idempotency key. The client brings the breaker and the bulkhead
 * and retries nothing: a failure is retried by the relay, as a new attempt
 * due after a jittered backoff, until the budget is spent.
 *
 * Once a send has failed, no further send of the batch starts: the mailer is
 * likely down (or its breaker open), and each further attempt would spend a
 * receipt's budget for nothing. Those receipts are released unattempted, as
 * are those whose turn comes after `startBefore` (their lease would end
 * before their send could) or once `stopping()` says so.
 */
export async function deliverBatch(
  deps: DeliverDeps,
  claimed: readonly ClaimedReceipt[],
  opts: { startBefore: number; stopping: () => boolean },
): Promise<BatchDelivery> {
  const random = deps.random ?? Math.random;
  const now = deps.now ?? (() => performance.now());
  const outcomes: Array<DeliveryOutcome | undefined> = new Array(claimed.length);
  let next = 0;
  let failed = false;

  const send = async (receipt: ClaimedReceipt): Promise<DeliveryOutcome> => {
    const { orderId, attempts } = receipt;
    const scope = createScope({ timeoutMs: deps.sendTimeoutMs, requestId: "", procedure: "receipts/send", criticality: "sheddable" });
    try {
      const res = await runInScope(scope, () => deps.mailer.sendReceipt({ idempotencyKey: orderId, orderId }));
      return { kind: "sent", orderId, attempts, messageId: res.messageId };
    } catch (e) {
      failed = true;
      const error = ConnectError.from(e).message;
      const decision = afterFailure(deps.schedule, attempts, random());
      return decision.kind === "give_up"
        ? { kind: "failed", orderId, attempts, error }
        : { kind: "retry", orderId, attempts, error, delayMs: decision.delayMs };
    } finally {
      scope.dispose();
    }
  };

  const lane = async () => {
    while (next < claimed.length && !failed && !opts.stopping() && now() < opts.startBefore) {
      const i = next++;
      outcomes[i] = await send(claimed[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(deps.concurrency, claimed.length) }, lane));
  return {
    outcomes: claimed.map((r, i) => outcomes[i] ?? { kind: "released", orderId: r.orderId, attempts: r.attempts }),
    failed,
  };
}
