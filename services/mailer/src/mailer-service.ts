import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { mailerV1 } from "@platform/proto";
import { serviceCounter } from "@platform/runtime";

/** Longest idempotency key or order id accepted (declared in mailer.proto): bounds what one call can ask for. */
export const maxKeyLength = 128;

export interface MailerDeps {
  /**
   * How many keys are remembered (oldest forgotten first). A real provider
   * keeps idempotency keys for a while, not forever; this stand-in keeps
   * them in memory, so a restart forgets them (the worker's own state, not
   * this, is what makes a receipt go out once: docs/outbox.md).
   */
  rememberKeys: number;
}

/**
 * A stand-in for an outside mail provider: "sends" a receipt (counts it in
 * `mailer_receipts_total{outcome="sent"}`) unless its idempotency key was
 * seen, in which case it answers the first message's id (outcome
 * "duplicate"). The lab makes it slow or down with handler faults.
 */
export class MailerService implements ServiceImpl<typeof mailerV1.MailerService> {
  private readonly sent = new Map<string, string>();
  private readonly receipts = serviceCounter(
    "mailer_receipts_total",
    "SendReceipt calls by outcome: sent (a new receipt went out) or duplicate (its key was sent before; nothing new went out).",
    ["outcome"],
  );

  constructor(private readonly deps: MailerDeps) {}

  async sendReceipt(req: mailerV1.SendReceiptRequest): Promise<mailerV1.SendReceiptResponse> {
    const key = req.idempotencyKey;
    const earlier = this.sent.get(key);
    if (earlier !== undefined) {
      this.receipts.inc({ outcome: "duplicate" });
      return create(mailerV1.SendReceiptResponseSchema, { messageId: earlier, duplicate: true });
    }
    const messageId = randomUUID();
    this.sent.set(key, messageId);
    if (this.sent.size > this.deps.rememberKeys) this.sent.delete(this.sent.keys().next().value!);
    this.receipts.inc({ outcome: "sent" });
    return create(mailerV1.SendReceiptResponseSchema, { messageId, duplicate: false });
  }
}
