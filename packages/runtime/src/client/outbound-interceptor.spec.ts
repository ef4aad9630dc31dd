// npm test: own process (it reads prom-client's global registry, which every spec's interceptors in a shared process also write)
/**
 * The outbound interceptor counts every call attempt in
 * rpc_client_calls_total by dependency, procedure and code. Successful
 * calls are counted in cells and handed to the counter when it is read
 * (metrics.ts `okCallCells`): a scrape must show them as if each had been
 * counted with inc(), next to the failures that still are.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { Counter } from "@platform/test-support";
import { register } from "../observability/metrics.js";
import { outboundInterceptor } from "./outbound-interceptor.js";

test("successful and failed calls both reach rpc_client_calls_total, by code, on every read", async () => {
  const dependency = "outbound-spec";
  let fail = false;
  const transport = createRouterTransport(
    (router) =>
      router.service(Counter, {
        get: () => {
          if (fail) throw new ConnectError("no such thing", Code.NotFound);
          return {};
        },
        async *count() {},
      } as never),
    { transport: { interceptors: [outboundInterceptor({ dependency, hopReserveMs: 5, minBudgetMs: 10 })] } },
  );
  const client = createClient(Counter, transport) as unknown as { get(req: object): Promise<unknown> };
  const series = async () => {
    const metric = await register.getSingleMetric("rpc_client_calls_total")?.get();
    return (metric?.values ?? []).filter((v) => v.labels.dependency === dependency).map((v) => [v.labels.procedure, v.labels.code, v.value]);
  };

  for (let i = 0; i < 3; i++) await client.get({});
  assert.deepEqual(await series(), [["/test.v1.Counter/Get", "ok", 3]]);
  // Read again with nothing new: the cells were handed over once, not twice.
  assert.deepEqual(await series(), [["/test.v1.Counter/Get", "ok", 3]]);

  fail = true;
  await assert.rejects(client.get({}), (e: unknown) => ConnectError.from(e).code === Code.NotFound);
  fail = false;
  await client.get({});
  const after = await series();
  assert.deepEqual(
    after.sort((a, b) => String(a[1]).localeCompare(String(b[1]))),
    [
      ["/test.v1.Counter/Get", "not_found", 1],
      ["/test.v1.Counter/Get", "ok", 4],
    ],
  );
});
