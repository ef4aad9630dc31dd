/**
 * HTTP/2 keepalive on dependency clients: a dependency that stops answering
 * (here a TCP proxy that goes silent mid-call: nothing forwarded, nothing
 * closed, as with a frozen process or a dropped flow) is noticed by PING and
 * the call fails UNAVAILABLE, although its deadline is minutes away. Real
 * HTTP/2 server, real client, real sockets.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import * as http2 from "node:http2";
import * as net from "node:net";
import { Code, ConnectError } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { healthV1 } from "@platform/proto";
import { readEnv } from "../config/config.js";
import { createDependencyClient } from "./dependency-client.js";
import { readServerConfig } from "../config/server-config.js";
import { readDependencyConfig } from "./dependency-config.js";

const { Health, HealthCheckResponse_ServingStatus: Status } = healthV1;

/** Answers Check at once, except for service "hang", which it holds until the caller leaves. */
let server: http2.Http2Server;
let serverPort: number;
/** Called when a "hang" call reaches the server: the call is on the wire, past the proxy. */
let onHangArrived: () => void = () => {};
before(async () => {
  server = http2.createServer(
    connectNodeAdapter({
      routes(router) {
        router.service(Health, {
          async check(req, ctx) {
            if (req.service === "hang") {
              onHangArrived();
              await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
            }
            return { status: Status.SERVING };
          },
        });
      },
    }),
  );
  server.on("session", (s) => s.on("error", () => {}));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  serverPort = (server.address() as net.AddressInfo).port;
});
after(() => {
  server?.close();
});

/** A TCP proxy to the server that can stop forwarding in both directions without closing anything. */
async function silenceableProxy() {
  const pairs: [net.Socket, net.Socket][] = [];
  const proxy = net.createServer((client) => {
    const upstream = net.connect(serverPort, "127.0.0.1");
    client.on("error", () => {});
    upstream.on("error", () => {});
    client.pipe(upstream);
    upstream.pipe(client);
    pairs.push([client, upstream]);
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(proxy.address() as net.AddressInfo).port}`,
    connections: () => pairs.length,
    silence() {
      for (const [a, b] of pairs) {
        a.unpipe(b);
        b.unpipe(a);
        a.pause();
        b.pause();
      }
    },
    close() {
      for (const [a, b] of pairs) a.destroy(), b.destroy();
      proxy.close();
    },
  };
}

function clientVia(url: string, env: Record<string, string>) {
  const dependency = readEnv({ PEER_URL: url, ...env }, (r) => readDependencyConfig(r, "peer", url));
  return createDependencyClient(Health, {
    dependency,
    server: readEnv({}, (r) => readServerConfig(r, "keepalive-test", { port: 0, adminPort: 0 })),
    retry: "none",
  });
}

/** Starts a call the server holds, silences the proxy once the call is in flight, and returns how the call ended. */
async function callThenSilence(env: Record<string, string>, timeoutMs: number): Promise<ConnectError> {
  const proxy = await silenceableProxy();
  try {
    const client = clientVia(proxy.url, env);
    assert.equal((await client.check({ service: "" }, { timeoutMs })).status, Status.SERVING, "served through the proxy");
    const arrived = new Promise<void>((resolve) => (onHangArrived = resolve));
    const call = client.check({ service: "hang" }, { timeoutMs }).then(
      () => assert.fail("the held call cannot succeed"),
      (e: unknown) => ConnectError.from(e),
    );
    // The call is on the wire (the server holds it), whatever the machine's speed; a call that
    // failed before arriving ends the wait too, and is then what the test reports.
    await Promise.race([arrived, call]);
    proxy.silence();
    const err = await call;
    assert.equal(proxy.connections(), 1, "one connection throughout");
    return err;
  } finally {
    proxy.close();
  }
}

describe("HTTP/2 keepalive on dependency clients", () => {
  test("a peer that goes silent mid-call is detected by PING: UNAVAILABLE, with a deadline 10 minutes away", { timeout: 60_000 }, async () => {
    // The PING's answer comes from this process's own server: on a loaded machine it took longer than
    // 300 ms, and the call before the silence failed. Any timeout far below the 10-minute deadline
    // shows that PING, not the deadline, found the silence.
    const err = await callThenSilence({ HTTP2_PING_INTERVAL_MS: "200", HTTP2_PING_TIMEOUT_MS: "2000" }, 600_000);
    assert.equal(Code[err.code], "Unavailable", err.message);
    assert.match(err.rawMessage, /^peer: .*PING timed out/);
  });

  test("control: without PING (HTTP2_PING_INTERVAL_MS=0) only the deadline ends the same call", { timeout: 60_000 }, async () => {
    const err = await callThenSilence({ HTTP2_PING_INTERVAL_MS: "0" }, 1500);
    assert.equal(Code[err.code], "DeadlineExceeded", err.message);
  });

  test("defaults: PING every 10 s without data, 5 s to answer, idle connections too; 0 turns it off", () => {
    const read = (env: Record<string, string>) => readEnv(env, (r) => readDependencyConfig(r, "peer", "http://127.0.0.1:1")).keepalive;
    assert.deepEqual(read({}), { pingIntervalMs: 10_000, pingTimeoutMs: 5_000, pingIdleConnection: true });
    assert.deepEqual(read({ HTTP2_PING_INTERVAL_MS: "0", HTTP2_PING_IDLE: "false" }), { pingIntervalMs: 0, pingTimeoutMs: 5_000, pingIdleConnection: false });
    assert.throws(() => read({ HTTP2_PING_TIMEOUT_MS: "0" }), /HTTP2_PING_TIMEOUT_MS/);
  });
});
