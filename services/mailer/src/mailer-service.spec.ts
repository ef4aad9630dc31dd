import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { mailerV1 } from "@platform/proto";
import { validationInterceptor } from "@platform/proto/validation";
import { MailerService, maxKeyLength } from "./mailer-service.js";

const request = (idempotencyKey: string, orderId = "o-1") => create(mailerV1.SendReceiptRequestSchema, { idempotencyKey, orderId });

async function codeOf(call: Promise<unknown>): Promise<string> {
  try {
    await call;
    return "ok";
  } catch (e) {
    return Code[ConnectError.from(e).code];
  }
}

test("a repeated key answers the first message and sends nothing new", async () => {
  const mailer = new MailerService({ rememberKeys: 10 });
  const first = await mailer.sendReceipt(request("k-1"));
  const again = await mailer.sendReceipt(request("k-1"));
  const other = await mailer.sendReceipt(request("k-2"));
  assert.equal(first.duplicate, false);
  assert.deepEqual([again.messageId, again.duplicate], [first.messageId, true]);
  assert.notEqual(other.messageId, first.messageId);
});

test("it remembers at most rememberKeys keys, forgetting the oldest first", async () => {
  const mailer = new MailerService({ rememberKeys: 2 });
  await mailer.sendReceipt(request("a"));
  await mailer.sendReceipt(request("b"));
  await mailer.sendReceipt(request("c"));
  assert.equal((await mailer.sendReceipt(request("c"))).duplicate, true);
  assert.equal((await mailer.sendReceipt(request("a"))).duplicate, false, "the oldest key was forgotten");
});

test("an empty or overlong key or order id is INVALID_ARGUMENT (mailer.proto's rules, checked before the handler)", async () => {
  const impl = new MailerService({ rememberKeys: 10 });
  const transport = createRouterTransport((router) => router.service(mailerV1.MailerService, impl), { router: { interceptors: [validationInterceptor()] } });
  const mailer = createClient(mailerV1.MailerService, transport);
  assert.equal(await codeOf(mailer.sendReceipt(request(""))), "InvalidArgument");
  assert.equal(await codeOf(mailer.sendReceipt(request("k", ""))), "InvalidArgument");
  assert.equal(await codeOf(mailer.sendReceipt(request("x".repeat(maxKeyLength + 1)))), "InvalidArgument");
  assert.equal(await codeOf(mailer.sendReceipt(request("x".repeat(maxKeyLength), "o".repeat(maxKeyLength)))), "ok");
});
