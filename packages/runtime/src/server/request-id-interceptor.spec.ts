/** Every answer, success or failure, carries the request's id (x-request-id). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Code, ConnectError } from "@connectrpc/connect";
import { requestLogInterceptor } from "../observability/request-log-interceptor.js";
import { requestIdInterceptor } from "./request-id-interceptor.js";
import { capturingLogger, inMemoryGet } from "../testing/in-memory-server.js";

const { logger } = capturingLogger();
const chain = [requestLogInterceptor({ logger, deadline: { defaultMs: 3000, maxMs: 30_000 } }), requestIdInterceptor()];

test("a success carries the caller's request id in its headers", async () => {
  let header: Headers | undefined;
  await inMemoryGet(chain, () => ({}))({ headers: { "x-request-id": "id-ok" }, onHeader: (h) => (header = h) });
  assert.equal(header?.get("x-request-id"), "id-ok");
});

test("a failure carries it in its metadata, and a request without one gets a fresh id", async () => {
  const get = inMemoryGet(chain, () => {
    throw new ConnectError("no such order", Code.NotFound);
  });
  const given = await get({ headers: { "x-request-id": "id-err" } }).catch((e: unknown) => ConnectError.from(e));
  assert.ok(given instanceof ConnectError);
  assert.equal(given.metadata.get("x-request-id"), "id-err");
  const minted = await get().catch((e: unknown) => ConnectError.from(e));
  assert.ok(minted instanceof ConnectError);
  assert.match(minted.metadata.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/);
});
