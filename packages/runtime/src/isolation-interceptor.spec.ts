import { test } from "node:test";
import assert from "node:assert/strict";
import { Code, ConnectError, type UnaryRequest, type UnaryResponse } from "@connectrpc/connect";
import { isolationInterceptor } from "./isolation-interceptor.js";

const config = { maxConcurrent: 4, maxQueue: 4, breaker: { volumeThreshold: 5, errorThresholdPercentage: 50, windowMs: 10_000, resetTimeoutMs: 60_000 } };

function call(method: string) {
  return { method: { name: method } } as unknown as UnaryRequest;
}

test("breakers are per method: a failing method is cut off, a working one on the same dependency is not", async () => {
  const reached: string[] = [];
  const next = async (req: UnaryRequest): Promise<UnaryResponse> => {
    reached.push(req.method.name);
    if (req.method.name === "CreateOrder") throw new ConnectError("orders: pricing down", Code.Unavailable);
    return {} as UnaryResponse;
  };
  const intercepted = isolationInterceptor("orders-test", config, 0)(next as never);
  for (let i = 0; i < 10; i++) await intercepted(call("CreateOrder")).catch(() => {});
  const before = reached.filter((m) => m === "CreateOrder").length;
  await assert.rejects(intercepted(call("CreateOrder")), (e: ConnectError) => e.code === Code.Unavailable && /CreateOrder: circuit open/.test(e.rawMessage));
  assert.equal(reached.filter((m) => m === "CreateOrder").length, before, "an open breaker does not call");
  await intercepted(call("GetOrder"));
  assert.equal(reached.at(-1), "GetOrder", "the other method still reaches the dependency");
});

test("a full bulkhead refuses at once, naming the dependency, without counting against the breaker", async () => {
  let release!: () => void;
  const hold = new Promise<void>((r) => (release = r));
  const next = async (): Promise<UnaryResponse> => {
    await hold;
    return {} as UnaryResponse;
  };
  const intercepted = isolationInterceptor("pricing-test", { ...config, maxConcurrent: 1, maxQueue: 0 }, 0)(next as never);
  const first = intercepted(call("GetPrices"));
  for (let i = 0; i < 10; i++) {
    await assert.rejects(intercepted(call("GetPrices")), (e: ConnectError) => e.code === Code.Unavailable && /pricing-test: bulkhead full/.test(e.rawMessage));
  }
  release();
  await first;
  await intercepted(call("GetPrices")); // the breaker did not open on our own refusals
});
