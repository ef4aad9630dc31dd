/** Every answer, success or failure, carries the request's id (x-request-id), and says when it waited out a restart. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Code, ConnectError } from "@connectrpc/connect";
import { currentScope } from "@platform/resilience";
import { deadlineInterceptor } from "../deadline/deadline-interceptor.js";
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

test("an answer whose request waited out a restart says so, success or failure; others do not", async () => {
  const withScope = [
    ...chain,
    deadlineInterceptor({ deadline: { edge: false, defaultMs: 3000, maxMs: 30_000 }, logger, shutdownSignal: new AbortController().signal }),
  ];
  const waited = () => {
    const mark = currentScope()?.restartMark;
    assert.ok(mark, "a served request's scope carries its restart mark");
    mark.waitedOutRestart = true;
  };
  let header: Headers | undefined;
  await inMemoryGet(withScope, () => (waited(), {}))({ onHeader: (h) => (header = h) });
  assert.equal(header?.get("x-waited-out-restart"), "1");
  const failed = await inMemoryGet(withScope, () => {
    waited();
    throw new ConnectError("pricing-db: database unavailable", Code.Unavailable);
  })().catch((e: unknown) => ConnectError.from(e));
  assert.ok(failed instanceof ConnectError);
  assert.equal(failed.metadata.get("x-waited-out-restart"), "1");
  await inMemoryGet(withScope, () => ({}))({ onHeader: (h) => (header = h) });
  assert.equal(header?.get("x-waited-out-restart"), null);
});
