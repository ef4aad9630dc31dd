/**
 * Plain mailer: services/mailer's SendReceipt (a remembered idempotency key
 * answers the first message's id) with no metrics. Serves gRPC on h2c (PORT).
 */
import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { mailerV1 } from "@platform/proto";
import { closer, portEnv, requiredEnv, runPlainService, serveH2c } from "./plain-runtime.js";

/** services/mailer's default MAILER_REMEMBER_KEYS. */
const rememberKeys = 1_000_000;

runPlainService("plain-mailer", async () => {
  const sent = new Map<string, string>();
  const routes = (router: ConnectRouter) =>
    router.service(mailerV1.MailerService, {
      async sendReceipt(req) {
        if (req.idempotencyKey === "" || req.orderId === "") throw new ConnectError("idempotency_key and order_id are required", Code.InvalidArgument);
        const earlier = sent.get(req.idempotencyKey);
        if (earlier !== undefined) return create(mailerV1.SendReceiptResponseSchema, { messageId: earlier, duplicate: true });
        const messageId = randomUUID();
        sent.set(req.idempotencyKey, messageId);
        if (sent.size > rememberKeys) sent.delete(sent.keys().next().value!);
        return create(mailerV1.SendReceiptResponseSchema, { messageId, duplicate: false });
      },
    });
  const server = await serveH2c(routes, portEnv("PORT"), requiredEnv("HOST"));
  return closer([server]);
});
