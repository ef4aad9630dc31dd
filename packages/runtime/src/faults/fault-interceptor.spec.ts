/** Injected handler faults (docs/faults.md) apply before the handler runs; with none in force the handler runs as is. */
import { afterEach, test } from "node:test";
import assert from "node:assert/strict";
import { Code, ConnectError } from "@connectrpc/connect";
import { setFaults } from "@platform/resilience";
import { faultInterceptor } from "./fault-interceptor.js";
import { inMemoryGet } from "../testing/in-memory-server.js";

afterEach(() => setFaults({}));

test("no fault in force: the handler runs", async () => {
  let ran = 0;
  await inMemoryGet([faultInterceptor()], () => ({ ran: ++ran }))();
  assert.equal(ran, 1);
});

test("a handler error rate of 1 fails every call UNAVAILABLE without running the handler", async () => {
  setFaults({ handler: { errorRate: 1 } });
  let ran = 0;
  const err = await inMemoryGet([faultInterceptor()], () => ({ ran: ++ran }))().catch((e: unknown) => ConnectError.from(e));
  assert.ok(err instanceof ConnectError);
  assert.equal(err.code, Code.Unavailable);
  assert.equal(err.rawMessage, "injected fault: handler failed");
  assert.equal(ran, 0);
});
