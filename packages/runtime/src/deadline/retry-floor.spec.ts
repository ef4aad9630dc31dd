/**
 * The edge's retry leaves every attempt room for the hops below it: a
 * reserve per service on the longest chain (`callDepth`) plus the minimum
 * budget. A dependency that fails fast teaches the latency estimate
 * nothing (it learns from successes), so without that floor a retry
 * honouring a long pushback started with the deadline's last milliseconds;
 * a hop further down then refused it ("not called, only 8ms left"), and
 * the caller heard DEADLINE_EXCEEDED instead of the UNAVAILABLE the
 * dependency gave (test/e2e/isolation.test.ts, once in seven runs).
 *
 * Real servers and sockets: a dependency that fails every call with a
 * pushback, a hop under serve() that calls it through
 * createDependencyClient with the gateway's kind of retry policy, and a
 * caller that sends a 1 s deadline. The hop keeps a 50 ms reserve, so the
 * floor at depth 3 is 160 ms: wide margins on either side, whatever the
 * machine's speed.
 */
import assert from "node:assert/strict";
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { create, createFileRegistry, type DescService } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, MethodOptions_IdempotencyLevel, file_google_protobuf_empty } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import { defaultRetryPolicy, pushbackHeaders } from "@platform/resilience";
import { readEnv } from "../config/config.js";
import { createDependencyClient } from "../client/dependency-client.js";
import { readDependencyConfig } from "../client/dependency-config.js";
import { createLogger } from "../observability/logger.js";
import { serve } from "../server/serve.js";
import { specServerConfig } from "../testing/served-get.js";

/** test.v1.Reader { Get }, a read (NO_SIDE_EFFECTS): the retry layer may repeat it. */
const Reader: DescService = createFileRegistry(
  create(FileDescriptorProtoSchema, {
    name: "test/v1/reader.proto",
    package: "test.v1",
    syntax: "proto3",
    dependency: ["google/protobuf/empty.proto"],
    service: [
      {
        name: "Reader",
        method: [
          {
            name: "Get",
            inputType: ".google.protobuf.Empty",
            outputType: ".google.protobuf.Empty",
            options: { idempotencyLevel: MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS },
          },
        ],
      },
    ],
  }),
  () => file_google_protobuf_empty,
).getService("test.v1.Reader")!;

type CounterClient = { get(req: object, opts?: { headers?: Record<string, string> }): Promise<unknown> };

let dependency: http2.Http2Server;
let dependencyUrl: string;
let calls = 0;
let pushbackMs = 0;
before(async () => {
  dependency = http2.createServer(
    connectNodeAdapter({
      routes(router) {
        router.service(Reader, {
          get: () => {
            calls++;
            throw new ConnectError("overloaded", Code.Unavailable, pushbackHeaders(pushbackMs));
          },
        } as never);
      },
    }),
  );
  dependency.on("session", (s) => s.on("error", () => {}));
  await new Promise<void>((resolve) => dependency.listen(0, "127.0.0.1", resolve));
  dependencyUrl = `http://127.0.0.1:${(dependency.address() as AddressInfo).port}`;
});
after(() => dependency?.close());

/** One call through the retrying hop with a 1 s deadline: the error it answers and how many calls reached the dependency. */
async function callThroughRetryingHop(pushback: number, callDepth: number): Promise<{ err: ConnectError; calls: number }> {
  pushbackMs = pushback;
  calls = 0;
  const server = specServerConfig("retrying-hop", { DEADLINE_HOP_RESERVE_MS: "50" });
  const peer = createDependencyClient(Reader, {
    dependency: readEnv({ PEER_URL: dependencyUrl }, (r) => readDependencyConfig(r, "peer", dependencyUrl)),
    server,
    callDepth,
    retry: { policy: defaultRetryPolicy, budget: { percentCanRetry: 1, minRetriesPerSec: 100, ttlMs: 10_000 } },
  }) as unknown as CounterClient;
  const hop = await serve({
    config: server,
    logger: createLogger(server.serviceName, "silent"),
    services: [Reader],
    routes(router) {
      router.service(Reader, { get: () => peer.get({}) } as never);
    },
  });
  await hop.ready;
  try {
    const caller = createClient(Reader, createGrpcTransport({ baseUrl: `http://127.0.0.1:${hop.port}` })) as unknown as CounterClient;
    const err = await caller.get({}, { headers: { "grpc-timeout": "1000m" } }).then(
      () => assert.fail("the dependency fails every call"),
      (e: unknown) => ConnectError.from(e),
    );
    return { err, calls };
  } finally {
    await hop.shutdown("test");
  }
}

test("a retry is not started when the pushback leaves less than the chain below needs", async () => {
  // 900 ms of pushback + 160 ms (3 reserves of 50 + 10) does not fit in what is left of 1 s.
  const { err, calls } = await callThroughRetryingHop(900, 3);
  assert.equal(Code[err.code], "Unavailable", err.message);
  assert.equal(calls, 1);
});

test("a retry that leaves the chain its reserves is made, and the dependency's failure is what the caller hears", async () => {
  // 500 + 160 fits after the first attempt; after the second (at about 500 ms) it does not.
  const { err, calls } = await callThroughRetryingHop(500, 3);
  assert.equal(Code[err.code], "Unavailable", err.message);
  assert.equal(calls, 2);
});

test("the floor follows the depth: one service below needs one reserve", async () => {
  // 800 + 60 (one reserve of 50 + 10) fits; 800 + 160 would not have after a first attempt of 40 ms.
  const { err, calls } = await callThroughRetryingHop(800, 1);
  assert.equal(Code[err.code], "Unavailable", err.message);
  assert.equal(calls, 2);
});
