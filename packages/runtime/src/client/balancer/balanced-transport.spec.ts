/**
 * The balanced transport against real HTTP/2 servers on loopback: calls
 * spread over the replicas, a replica that goes away costs no call, and a
 * replica the resolver starts naming gets calls from the next resolution.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { createClient } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { healthV1 } from "@platform/proto";
import { createBalancedTransport } from "./balanced-transport.js";
import { defaultOutlierDetection } from "./outlier-detector.js";
import { listen } from "../../server/listen.js";

const { Health, HealthCheckResponse_ServingStatus: Status } = healthV1;

interface Replica {
  origin: string;
  calls: number;
  close(): Promise<void>;
}

const servers: http2.Http2Server[] = [];
after(() => {
  for (const s of servers) s.close();
});

async function replica(): Promise<Replica> {
  const r = { origin: "", calls: 0, close: async () => {} };
  const server = http2.createServer(
    connectNodeAdapter({
      routes(router) {
        router.service(Health, {
          check() {
            r.calls++;
            return { status: Status.SERVING };
          },
        });
      },
    }),
  );
  server.on("session", (s) => s.on("error", () => {}));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  r.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  r.close = () =>
    // Node's HTTP/2 server sends GOAWAY on its open sessions and accepts no new connection.
    new Promise<void>((resolve) => server.close(() => resolve()));
  return r;
}

function clientOver(resolver: () => Promise<string[]>) {
  const { transport, balancer } = createBalancedTransport({
    dependency: "peer",
    baseUrl: "http://peer:1",
    resolver,
    resolveIntervalMs: 60_000,
    outlierDetection: defaultOutlierDetection,
    interceptors: [],
  });
  after(() => balancer.close());
  return { client: createClient(Health, transport), balancer };
}

/** `n` calls, `concurrency` at a time; every one must succeed. */
async function calls(client: ReturnType<typeof clientOver>["client"], n: number, concurrency = 8): Promise<void> {
  let left = n;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (left-- > 0) assert.equal((await client.check({ service: "" })).status, Status.SERVING);
    }),
  );
}

test("three replicas each take a third of the calls (within 10 points)", async () => {
  const rs = [await replica(), await replica(), await replica()];
  const { client } = clientOver(() => Promise.resolve(rs.map((r) => r.origin)));
  await calls(client, 900);
  for (const r of rs) assert.ok(Math.abs(r.calls / 900 - 1 / 3) <= 0.1, `shares: ${rs.map((x) => x.calls).join(", ")}`);
});

test("a replica that went away (connections refused) costs no call: each refused one goes to another replica", async () => {
  const rs = [await replica(), await replica(), await replica()];
  const { client, balancer } = clientOver(() => Promise.resolve(rs.map((r) => r.origin)));
  await calls(client, 90);
  await rs[0]!.close();
  const before = rs[0]!.calls;
  await calls(client, 300);
  assert.equal(rs[0]!.calls, before, "the closed replica served nothing more");
  assert.equal(rs[1]!.calls + rs[2]!.calls, 390 - before, "all 300 served by the others");
  assert.equal(balancer.ejectedCount(), 1, "and it is ejected");
});

test("a replica the resolver starts naming gets calls from the next resolution on", async () => {
  const rs = [await replica(), await replica()];
  const named = rs.map((r) => r.origin);
  const { client, balancer } = clientOver(() => Promise.resolve([...named]));
  await calls(client, 60);
  const added = await replica();
  named.push(added.origin);
  await calls(client, 60);
  assert.equal(added.calls, 0, "unknown before the resolver is asked again");
  await balancer.refresh();
  await calls(client, 300);
  assert.ok(added.calls >= 50, `the added replica's calls out of 300: ${added.calls}`);
});

test("a GOAWAY (here the server's maximum connection age) has the addresses resolved again at once; calls go on over a new connection", async () => {
  const server = await listen({
    host: "127.0.0.1",
    port: 0,
    http1: false,
    connectionAge: { maxAgeMs: 600, jitter: 0, graceMs: 5_000 },
    handler: connectNodeAdapter({
      routes(router) {
        router.service(Health, { check: () => ({ status: Status.SERVING }) });
      },
    }),
  });
  after(() => {
    server.stopAccepting();
    server.destroy();
  });
  let resolutions = 0;
  const { client } = clientOver(() => {
    resolutions++;
    return Promise.resolve([`http://127.0.0.1:${server.port}`]);
  });
  assert.equal((await client.check({ service: "" })).status, Status.SERVING);
  const before = resolutions;
  // The GOAWAY comes 600 ms after the connection opened (past the 250 ms between resolutions); the periodic one is 60 s away.
  for (let i = 0; i < 250 && resolutions === before; i++) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.ok(resolutions > before, "resolved again after the GOAWAY");
  assert.equal((await client.check({ service: "" })).status, Status.SERVING, "served after it");
});
