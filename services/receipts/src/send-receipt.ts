import { ConnectError, type Client } from "@connectrpc/connect";
import type { mailerV1 } from "@platform/proto";
import { createScope, runInScope } from "@platform/resilience";
import { serviceCounter } from "@platform/runtime";
import type { ReceiptStore } from "./receipt-store.js";
import { afterFailure, type RetrySchedule } from "./retry-schedule.js";

export interface SendReceiptDeps {
  store: Pick<ReceiptStore, "startAttempt" | "markSent" | "scheduleRetry" | "markFailed">;
  mailer: Pick<Client<typeof mailerV1.MailerService>, "sendReceipt">;
  schedule: RetrySchedule;
  /** The job's own deadline: its statements and its call to the mailer share it. */
  jobTimeoutMs: number;
  /**
   * After a failed delivery, every runner of this process holds back for
   * about this long (between half and all of it, jittered) before its next
   * attempt: while the dependency is down, the jobs wait in the queue
   * instead of each costing transactions and an attempt of its budget.
   */
  pauseAfterFailureMs: number;
  random?: () => number;
  /** Injectable for tests: the clock and the wait. */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  logger: { info(o: object, m: string): void; warn(o: object, m: string): void };
}

/** What one run of a job did, as counted in receipts_jobs_total. */
export type JobOutcome = "sent" | "already_done" | "retry_scheduled" | "failed" | "malformed";

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * One run of a receipt's job, under its own deadline (nobody waits for it:
 * the order was answered long ago). The mailer is called with the order id
 * as its idempotency key, through the platform's dependency client
 * (deadline, breaker, bulkhead; no retries of its own). A failure is
 * retried here, by queueing a new job at a jittered time, until the budget
 * is spent: the queue is the one layer that retries this work.
 */
export function createSendReceipt(deps: SendReceiptDeps): (payload: unknown) => Promise<JobOutcome> {
  const jobs = serviceCounter(
    "receipts_jobs_total",
    "Receipt job runs by outcome: sent, already_done (sent or failed before: a repeated job), retry_scheduled, failed (retry budget spent), malformed.",
    ["outcome"],
  );
  const random = deps.random ?? Math.random;
  const now = deps.now ?? (() => performance.now());
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  // Shared by the runners: the dependency failed recently, hold back until then.
  let holdUntil = 0;
  const run = async (payload: unknown): Promise<JobOutcome> => {
    const orderId = (payload as { orderId?: unknown } | null)?.orderId;
    if (typeof orderId !== "string" || !uuid.test(orderId)) {
      // It can never succeed; retrying it would only keep it in the queue.
      deps.logger.warn({ payload }, "receipt job without a valid orderId dropped");
      return "malformed";
    }
    const attempts = await deps.store.startAttempt(orderId);
    if (attempts === undefined) return "already_done";
    try {
      const res = await deps.mailer.sendReceipt({ idempotencyKey: orderId, orderId });
      // False when a concurrent run of the same receipt marked it first; the
      // mailer answered both with one message (same key).
      return (await deps.store.markSent(orderId, res.messageId)) ? "sent" : "already_done";
    } catch (e) {
      holdUntil = Math.max(holdUntil, now() + deps.pauseAfterFailureMs * (0.5 + random() / 2));
      const error = ConnectError.from(e).message;
      const next = afterFailure(deps.schedule, attempts, random());
      if (next.kind === "give_up") {
        await deps.store.markFailed(orderId, error);
        deps.logger.warn({ orderId, attempts, error }, "receipt failed: retry budget spent");
        return "failed";
      }
      await deps.store.scheduleRetry(orderId, error, next.delayMs);
      deps.logger.info({ orderId, attempts, retryInMs: next.delayMs, error }, "receipt not sent; retry scheduled");
      return "retry_scheduled";
    }
  };
  return async (payload) => {
    // Before the job's deadline starts: waiting here costs nothing but the slot.
    const wait = holdUntil - now();
    if (wait > 0) await sleep(wait);
    const scope = createScope({ timeoutMs: deps.jobTimeoutMs, requestId: "", procedure: "receipts/send_receipt", criticality: "sheddable" });
    try {
      const outcome = await runInScope(scope, () => run(payload));
      jobs.inc({ outcome });
      return outcome;
    } finally {
      scope.dispose();
    }
  };
}
