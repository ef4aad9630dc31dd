/**
 * Every failure leaves as a deliberate ConnectError: an unexpected
 * exception as INTERNAL naming the request id (its message and stack only
 * in the log), a ConnectError with its code, message and details but none
 * of its metadata except the pushback hint.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Code, ConnectError } from "@connectrpc/connect";
import { errorInterceptor } from "./error-interceptor.js";
import { requestLogInterceptor } from "../observability/request-log-interceptor.js";
import { capturingLogger, inMemoryGet } from "../testing/in-memory-server.js";

const deadline = { defaultMs: 3000, maxMs: 30_000 };

test("an unexpected exception is answered INTERNAL without its internals, and logged with them", async () => {
  const { logger, lines } = capturingLogger();
  const get = inMemoryGet([requestLogInterceptor({ logger, deadline }), errorInterceptor({ logger })], () => {
    throw new Error('relation "orders" does not exist');
  });
  const err = await get({ headers: { "x-request-id": "boom-1" } }).catch((e: unknown) => ConnectError.from(e));
  assert.ok(err instanceof ConnectError);
  assert.equal(err.code, Code.Internal);
  assert.equal(err.rawMessage, "internal error (request id boom-1)");
  const logged = lines.find((l) => l["msg"] === "unexpected error in handler");
  assert.ok(logged, "the exception is logged");
  assert.match(JSON.stringify(logged["err"]), /relation \\"orders\\" does not exist/);
});

test("a ConnectError keeps its code and message; only the pushback hint and a refusal's mark of its metadata cross", async () => {
  const { logger } = capturingLogger();
  const get = inMemoryGet([errorInterceptor({ logger })], () => {
    throw new ConnectError("overloaded", Code.ResourceExhausted, {
      "grpc-retry-pushback-ms": "250",
      "x-failed-dependency": "pricing",
      "x-internal-host": "db-7",
    });
  });
  const err = await get().catch((e: unknown) => ConnectError.from(e));
  assert.ok(err instanceof ConnectError);
  assert.equal(err.code, Code.ResourceExhausted);
  assert.equal(err.rawMessage, "overloaded");
  assert.equal(err.metadata.get("grpc-retry-pushback-ms"), "250");
  assert.equal(err.metadata.get("x-failed-dependency"), "pricing");
  assert.equal(err.metadata.get("x-internal-host"), null);
});
