/**
 * A hop whose event loop was busy past its deadline (a starved process,
 * a long garbage collection): the request's one timer (request-context.ts)
 * then fires late, with the end of the calls and the deadline both past.
 * The caller must still be told which dependency did not answer, as when
 * the timer is on time: the calls end first, and the deadline a turn of
 * the event loop later, so that the failed call's answer ("<dependency>: no
 * answer before the deadline") is the one given. Aborting both at once
 * answered "deadline exceeded before the request completed", naming no
 * hop (seen through the gateway, over grpc-js, on a loaded machine).
 *
 * Real servers and sockets: a dependency that never answers, the hop under
 * serve() calling it through createDependencyClient, and a caller that
 * sends its deadline as a header (a client-side timer of its own, in this
 * same blocked process, would give up before the answer arrives).
 */
import assert from "node:assert/strict";
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { connectNodeAdapter, createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { Counter } from "@platform/test-support";
import { readEnv } from "../config/config.js";
import { createDependencyClient } from "../client/dependency-client.js";
import { readDependencyConfig } from "../client/dependency-config.js";
import { serveGet, specServerConfig } from "../testing/served-get.js";

type CounterClient = { get(req: object, opts?: { headers?: Record<string, string> }): Promise<unknown> };

/** Holds every call until the test ends, whatever its deadline says. */
let dependency: http2.Http2Server;
let dependencyUrl: string;
let arrived: () => void = () => {};
let releaseAll: () => void = () => {};
const released = new Promise<void>((r) => (releaseAll = r));
before(async () => {
  dependency = http2.createServer(
    connectNodeAdapter({
      routes(router) {
        router.service(Counter, {
          get: async () => {
            arrived();
            await released;
            return {};
          },
          async *count() {},
        } as never);
      },
    }),
  );
  dependency.on("session", (s) => s.on("error", () => {}));
  await new Promise<void>((resolve) => dependency.listen(0, "127.0.0.1", resolve));
  dependencyUrl = `http://127.0.0.1:${(dependency.address() as AddressInfo).port}`;
});
after(() => {
  releaseAll();
  dependency?.close();
});

/** Keeps the whole process (hop, caller and dependency alike) from running for `ms`. */
function blockEventLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy: no timer, no I/O
  }
}

for (const protocol of ["grpc", "connect-http1"] as const) {
  test(`${protocol}: a deadline timer that fires late still answers with the dependency that did not answer`, async () => {
    const server = specServerConfig("late-hop");
    const peer = createDependencyClient(Counter, {
      dependency: readEnv({ PEER_URL: dependencyUrl }, (r) => readDependencyConfig(r, "peer", dependencyUrl)),
      server,
      retry: "none",
    }) as unknown as CounterClient;
    const hop = await serveGet(protocol, server, () => peer.get({}) as Promise<object>);
    try {
      const baseUrl = `http://127.0.0.1:${hop.port}`;
      const transport = protocol === "grpc" ? createGrpcTransport({ baseUrl }) : createConnectTransport({ baseUrl, httpVersion: "1.1" });
      const caller = createClient(Counter, transport) as unknown as CounterClient;
      const reached = new Promise<void>((r) => (arrived = r));
      const deadline: Record<string, string> = protocol === "grpc" ? { "grpc-timeout": "300m" } : { "connect-timeout-ms": "300" };
      const call = caller.get({}, { headers: deadline }).then(
        () => assert.fail("the dependency never answers"),
        (e: unknown) => ConnectError.from(e),
      );
      // The call is waiting on the dependency: now the hop cannot run until well past its deadline.
      await Promise.race([reached, call]);
      blockEventLoop(600);
      const err = await call;
      assert.equal(Code[err.code], "DeadlineExceeded", err.message);
      assert.equal(err.rawMessage, "peer: no answer before the deadline");
    } finally {
      await hop.shutdown("test");
    }
  });
}
