/**
 * The edge's retry loop and a server stream: a stream that fails before it
 * is answered is retried (within the budget, with its request sent again);
 * one that fails after its first message is not: the failure reaches the
 * caller, who resumes (docs/streams.md). Against a real h2c dependency,
 * through createDependencyClient with the gateway's kind of retry policy.
 */
import { after, before, beforeEach, test } from "node:test";
import assert from "node:assert/strict";
import { Code, ConnectError } from "@connectrpc/connect";
import { defaultRetryPolicy } from "@platform/resilience";
import { ordersV1 } from "@platform/proto";
import { startDownstream, type Downstream } from "@platform/test-support";
import { readEnv } from "../config/config.js";
import { readServerConfig } from "../config/server-config.js";
import { createDependencyClient } from "./dependency-client.js";
import { readDependencyConfig } from "./dependency-config.js";

const orderId = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
/** What each call to the dependency does: fail before any message, fail after the first, or serve two. */
let behaviour: ("fail-at-once" | "fail-after-first" | "serve")[] = [];
const received: ordersV1.WatchOrderRequest[] = [];
let dependency: Downstream;
before(async () => {
  dependency = await startDownstream((router) =>
    router.service(ordersV1.OrdersService, {
      async *watchOrder(req) {
        received.push(req);
        const what = behaviour.shift() ?? "serve";
        if (what === "fail-at-once") throw new ConnectError("restarting", Code.Unavailable);
        yield { position: 1n };
        if (what === "fail-after-first") throw new ConnectError("connection lost", Code.Unavailable);
        yield { position: 2n };
      },
    }),
  );
});
after(() => dependency?.close());
beforeEach(() => {
  received.length = 0;
});

function edgeClient() {
  const server = readEnv({ PORT: "0", ADMIN_PORT: "0" }, (r) => readServerConfig(r, "edge-spec", { port: 0, adminPort: 0, edge: true }));
  return createDependencyClient(ordersV1.OrdersService, {
    dependency: readEnv({}, (r) => readDependencyConfig(r, "orders", dependency.baseUrl)),
    server,
    retry: {
      policy: { ...defaultRetryPolicy, backoff: { initialMs: 1, multiplier: 1, maxMs: 1 } },
      budget: { percentCanRetry: 1, minRetriesPerSec: 100, ttlMs: 10_000 },
    },
  });
}

async function drain(messages: AsyncIterable<ordersV1.WatchOrderResponse>): Promise<{ positions: bigint[]; error?: ConnectError }> {
  const positions: bigint[] = [];
  try {
    for await (const m of messages) positions.push(m.position);
    return { positions };
  } catch (e) {
    return { positions, error: ConnectError.from(e) };
  }
}

test("a stream that fails before it is answered is retried, its request sent again", async () => {
  behaviour = ["fail-at-once", "serve"];
  const { positions, error } = await drain(edgeClient().watchOrder({ orderId, resumeAfter: 1n }, { timeoutMs: 5000 }));
  assert.equal(error, undefined);
  assert.deepEqual(positions, [1n, 2n]);
  assert.deepEqual(
    received.map((r) => [r.orderId, r.resumeAfter]),
    [
      [orderId, 1n],
      [orderId, 1n],
    ],
  );
});

test("a stream that fails after its first message is not retried: the caller gets the failure after that message", async () => {
  behaviour = ["fail-after-first", "serve"];
  const { positions, error } = await drain(edgeClient().watchOrder({ orderId }, { timeoutMs: 5000 }));
  assert.deepEqual(positions, [1n]);
  assert.equal(error?.code, Code.Unavailable);
  assert.equal(received.length, 1);
});
