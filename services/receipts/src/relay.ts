import type { BatchDelivery } from "./deliver-batch.js";
import type { ReceiptBatches } from "./receipt-batches.js";
import type { ClaimedReceipt, DeliveryOutcome } from "./receipt-statements.js";

export interface RelayOptions {
  batches: Pick<ReceiptBatches, "claim" | "complete">;
  /** Sends a claimed batch (deliver-batch.ts); never throws. */
  deliver: (claimed: readonly ClaimedReceipt[], opts: { startBefore: number; stopping: () => boolean }) => Promise<BatchDelivery>;
  /** Receipts claimed at once, at most. */
  batchSize: number;
  /** How long a claim holds its receipts; a relay that dies leaves them to be claimed again after this. */
  leaseMs: number;
  /** After a claim that was not full, the wait before the next: new receipts are found this late at most. */
  pollIntervalMs: number;
  /** After a failed send, the relay holds back between half and all of this (jittered) before its next claim. */
  pauseAfterFailureMs: number;
  /** One send's deadline: a send starts only if it and the outcomes' write fit in the lease. */
  sendTimeoutMs: number;
  /** One statement's deadline: the outcomes' write is retried within the lease, one deadline at a time. */
  statementTimeoutMs: number;
  logger: { info(o: object, m: string): void; warn(o: object, m: string): void };
  /** After each batch's outcomes were written (or given up on: `written` undefined). */
  onBatch?: (outcomes: readonly DeliveryOutcome[], written: ReadonlySet<string> | undefined) => void;
  random?: () => number;
  now?: () => number;
}

export interface Relay {
  /**
   * Stops claiming, lets the batch in flight finish (its unstarted sends are
   * released) and write its outcomes, within `budgetMs`. Past it (the
   * database is away), it returns anyway: the batch's receipts are claimed
   * again when their lease ends.
   */
  stop(budgetMs: number): Promise<void>;
}

/** Time the outcomes' write may take after the last send: this many statement deadlines. */
const writeAttemptsReserved = 2;

/**
 * The outbox's relay: claims due receipts in batches, sends each, and
 * writes the batch's outcomes in one statement. A full batch is followed by
 * the next claim at once (a backlog drains at full speed); a batch that was
 * not full by a wait of `pollIntervalMs`, so that orders arriving meanwhile
 * are claimed together (in a quiet system a receipt waits at most this long
 * before its claim). A failed send holds the relay back for the pause
 * after a failure, a failed claim for a growing wait: neither ends it.
 */
export function startRelay(opts: RelayOptions): Relay {
  const random = opts.random ?? Math.random;
  const now = opts.now ?? (() => performance.now());
  let stopped = false;
  let wake: (() => void) | undefined;
  /** A wait that stop() cuts short. */
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    }).finally(() => {
      wake = undefined;
    });
  const jittered = (ms: number) => ms * (0.5 + random() / 2);
  /** The wait after the `n`-th failed statement in a row: doubling from the poll interval up to the pause after a failure. */
  const afterStatementFailure = (n: number) => jittered(Math.min(Math.max(opts.pauseAfterFailureMs, opts.pollIntervalMs), opts.pollIntervalMs * 2 ** n));

  /** Writes a batch's outcomes, trying again while its lease lasts; undefined when it never could (the receipts come back with the lease). */
  const write = async (outcomes: readonly DeliveryOutcome[], leaseEnds: number): Promise<ReadonlySet<string> | undefined> => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await opts.batches.complete(outcomes);
      } catch (err) {
        const wait = afterStatementFailure(attempt);
        if (stopped || now() + wait + opts.statementTimeoutMs > leaseEnds) {
          opts.logger.warn({ err, receipts: outcomes.length }, "could not write the batch's outcomes: its receipts are claimed again when their lease ends");
          return undefined;
        }
        opts.logger.warn({ err, attempt }, "could not write the batch's outcomes yet; trying again");
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  };

  const loop = async () => {
    let claimFailures = 0;
    while (!stopped) {
      let claimed: ClaimedReceipt[];
      const claimedAt = now();
      try {
        claimed = await opts.batches.claim(opts.batchSize, opts.leaseMs);
        claimFailures = 0;
      } catch (err) {
        claimFailures++;
        const wait = afterStatementFailure(claimFailures);
        opts.logger.warn({ err, waitMs: Math.round(wait) }, "could not claim receipts; trying again");
        await pause(wait);
        continue;
      }
      if (claimed.length === 0) {
        await pause(opts.pollIntervalMs);
        continue;
      }
      const leaseEnds = claimedAt + opts.leaseMs;
      const delivery = await opts.deliver(claimed, {
        startBefore: leaseEnds - opts.sendTimeoutMs - writeAttemptsReserved * opts.statementTimeoutMs,
        stopping: () => stopped,
      });
      const written = await write(delivery.outcomes, leaseEnds);
      opts.onBatch?.(delivery.outcomes, written);
      if (delivery.failed) await pause(jittered(opts.pauseAfterFailureMs));
      else if (claimed.length < opts.batchSize) await pause(opts.pollIntervalMs);
    }
  };
  const running = loop();

  return {
    async stop(budgetMs) {
      stopped = true;
      wake?.();
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), budgetMs);
      });
      const done = await Promise.race([running.then(() => true), late]);
      clearTimeout(timer);
      if (!done) opts.logger.warn({ budgetMs }, "the relay did not stop in time (is the database away?): its receipts are claimed again when their lease ends");
    },
  };
}
