// npm test: own process (it reads prom-client's global registry, which every spec's interceptors in a shared process also write)
/**
 * The request log interceptor writes one line per request with what the
 * caller got, at warn for the server's own failures, and tells the
 * outcome to its listener (the edge's intake controller).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { requestLogInterceptor } from "./request-log-interceptor.js";
import { capturingLogger, inMemoryGet } from "../testing/in-memory-server.js";
import { requestContext } from "../server/request-context.js";
import { register, rpcServerMetrics } from "./metrics.js";

const deadline = { defaultMs: 3000, maxMs: 30_000 };

test("one line per request: procedure, code, request id, caller and the deadline it was given", async () => {
  const { logger, lines } = capturingLogger();
  const outcomes: (Code | "ok")[] = [];
  const get = inMemoryGet([requestLogInterceptor({ logger, deadline, onOutcome: (code) => outcomes.push(code) })], () => ({}));
  await get({ headers: { "x-request-id": "log-1", "x-caller-id": "alice" }, timeoutMs: 2000 });
  assert.equal(lines.length, 1);
  const line = lines[0]!;
  assert.equal(line["msg"], "rpc");
  assert.equal(line["procedure"], "/test.v1.Counter/Get");
  assert.equal(line["code"], "ok");
  assert.equal(line["requestId"], "log-1");
  assert.equal(line["caller"], "alice");
  assert.equal(line["deadlineSource"], "client");
  assert.ok(Number(line["deadlineMs"]) <= 2000);
  assert.deepEqual(outcomes, ["ok"]);
});

test("a failure of the server's own making is logged at warn with its message; a caller's mistake at info", async () => {
  const { logger, lines } = capturingLogger();
  let code = Code.Unavailable;
  const get = inMemoryGet([requestLogInterceptor({ logger, deadline })], () => {
    throw new ConnectError("stock down", code);
  });
  await assert.rejects(get());
  code = Code.InvalidArgument;
  await assert.rejects(get());
  assert.deepEqual(
    lines.map((l) => [l["code"], l["level"], l["error"]]),
    [
      ["unavailable", 40, "stock down"],
      ["invalid_argument", 30, "stock down"],
    ],
  );
});

test("the line is the request's own: the context is marked logged, so serve() writes none", async () => {
  const { logger } = capturingLogger();
  let logged: boolean | undefined;
  const peek: Interceptor = (next) => async (req) => {
    const res = await next(req);
    logged = requestContext({ values: req.contextValues })?.logged;
    return res;
  };
  await inMemoryGet([requestLogInterceptor({ logger, deadline }), peek], () => ({}))();
  assert.equal(logged, true);
});

test("the request counter and the in-flight gauge show what the cells counted, whenever the registry is read", async () => {
  const { logger } = capturingLogger();
  let metrics = "";
  const get = inMemoryGet([requestLogInterceptor({ logger, deadline })], async () => {
    // Read while this request is in flight: the gauge counts it.
    metrics = await register.metrics();
    return {};
  });
  const series = (text: string, name: string) =>
    Number(new RegExp(`^${name}\\{procedure="/test.v1.Counter/Get"(,code="ok")?\\} (\\d+)$`, "m").exec(text)?.[2] ?? Number.NaN);
  const before = series(await register.metrics(), "rpc_server_requests_total");
  await get({});
  assert.equal(series(metrics, "rpc_server_in_flight"), 1, "in flight while being served");
  const after = await register.metrics();
  assert.equal(series(after, "rpc_server_in_flight"), 0, "none once answered");
  assert.equal(series(after, "rpc_server_requests_total") - (Number.isNaN(before) ? 0 : before), 1, "counted once");
  // A direct inc on the counter (what code outside the interceptor may do) adds up with the cells.
  rpcServerMetrics().requests.inc({ procedure: "/test.v1.Counter/Get", code: "ok" });
  await get({});
  assert.equal(series(await register.metrics(), "rpc_server_requests_total") - (Number.isNaN(before) ? 0 : before), 3);
});
