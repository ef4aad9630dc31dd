import { fileURLToPath } from "node:url";
import { createDatabase, migrate } from "@platform/database";
import { startTestServer, type TestServer } from "../../../../packages/database/src/testing/test-server.js";
import { deliverBatch } from "../deliver-batch.js";
import { ReceiptBatches } from "../receipt-batches.js";
import { type Relay, type RelayOptions, startRelay } from "../relay.js";
import type { ClaimedReceipt } from "../receipt-statements.js";

const migrations = fileURLToPath(new URL("../../migrations", import.meta.url));

/** A real PostgreSQL for one spec file, with the receipts schema in it. */
export async function startReceiptsDatabase(): Promise<TestServer> {
  const server = await startTestServer();
  await migrate(server.url, { schema: "receipts", directory: migrations });
  return server;
}

/**
 * A stand-in for the mailer that remembers every idempotency key, as the
 * real one does: `fresh` counts the receipts that went out under each key
 * (exactly once means 1 for every key), `calls` every call. `delayMs` makes
 * each call take that long.
 */
export class CountingMailer {
  readonly fresh = new Map<string, number>();
  readonly messageIds = new Map<string, string>();
  calls = 0;
  duplicates = 0;
  delayMs = 0;

  readonly sendReceipt = async (req: { idempotencyKey?: string }) => {
    const key = req.idempotencyKey ?? "";
    this.calls++;
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    const earlier = this.messageIds.get(key);
    if (earlier !== undefined) {
      this.duplicates++;
      return { messageId: earlier, duplicate: true } as never;
    }
    const messageId = `m-${key}`;
    this.messageIds.set(key, messageId);
    this.fresh.set(key, (this.fresh.get(key) ?? 0) + 1);
    return { messageId, duplicate: false } as never;
  };
}

export interface RelayUnderTest {
  relay: Relay;
  /** The size of each batch claimed, in order. */
  batches: number[];
  close(): Promise<void>;
}

/** A relay as the service builds one (main.ts), on `url`, sending through `mailer`; `settings` override the test's short defaults. */
export function startTestRelay(
  url: string,
  mailer: CountingMailer,
  settings: Partial<Omit<RelayOptions, "batches" | "deliver">> & { applicationName?: string; concurrency?: number } = {},
): RelayUnderTest {
  const statementTimeoutMs = settings.statementTimeoutMs ?? 300;
  const sendTimeoutMs = settings.sendTimeoutMs ?? 1000;
  const db = createDatabase({
    name: "receipts-db",
    connectionString: url,
    maxConnections: 2,
    minBudgetMs: 10,
    applicationName: settings.applicationName ?? "receipts-spec",
  });
  const batches: number[] = [];
  const relay = startRelay({
    batches: new ReceiptBatches(db, { statementTimeoutMs, lockTimeoutReserveMs: 5 }),
    deliver: (claimed: readonly ClaimedReceipt[], opts) => {
      batches.push(claimed.length);
      return deliverBatch(
        { mailer, schedule: { baseMs: 100, capMs: 500, maxAttempts: 20 }, sendTimeoutMs, concurrency: settings.concurrency ?? 8 },
        claimed,
        opts,
      );
    },
    batchSize: 100,
    leaseMs: 5000,
    pollIntervalMs: 20,
    pauseAfterFailureMs: 500,
    logger: { info() {}, warn() {} },
    ...settings,
    sendTimeoutMs,
    statementTimeoutMs,
  });
  return {
    relay,
    batches,
    async close() {
      await relay.stop(5000);
      await db.close();
    },
  };
}
