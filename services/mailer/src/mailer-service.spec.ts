import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { mailerV1 } from "@platform/proto";
import { MailerService, maxIdLength } from "./mailer-service.js";

const request = (id: string) => create(mailerV1.GetItemRequestSchema, { id });

async function codeOf(call: Promise<unknown>): Promise<string> {
  try {
    await call;
    return "ok";
  } catch (e) {
    return Code[ConnectError.from(e).code];
  }
}

const service = () => new MailerService({ items: new Map([["a-1", "First"]]) });

test("getItem returns the item with that id", async () => {
  const res = await service().getItem(request("a-1"));
  assert.deepEqual([res.item?.id, res.item?.name], ["a-1", "First"]);
});

test("getItem is NOT_FOUND for an unknown id", async () => {
  assert.equal(await codeOf(service().getItem(request("nope"))), "NotFound");
});

test("getItem refuses an empty or overlong id with INVALID_ARGUMENT", async () => {
  assert.equal(await codeOf(service().getItem(request(""))), "InvalidArgument");
  assert.equal(await codeOf(service().getItem(request("x".repeat(maxIdLength + 1)))), "InvalidArgument");
});
