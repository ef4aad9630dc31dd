/**
 * serve()'s shutdown and HTTP/2's two-step goodbye (listen.ts
 * `closeGracefully`): a stream the client opened before it saw the shutdown
 * notice is answered (served or UNAVAILABLE), never refused (REFUSED_STREAM,
 * which connect-node's client reports as INTERNAL), even when the client
 * acknowledges the notice after serve()'s 500 ms grace; and a client that
 * never does gets its final GOAWAY (listen.ts) before the shutdown ends.
 * (The drain bound, drain timeout + grace, caps that wait: serve.ts.)
 *
 * A real serve() behind a TCP relay that can hold what the server sends:
 * the client then neither sees the notice nor acknowledges the PING after
 * it, as a busy client does not for a while. The clock is fake (setTimeout
 * only), so the grace and the bound pass when the test says so.
 */
import { afterEach, beforeEach, mock, test } from "node:test";
import assert from "node:assert/strict";
import * as http2 from "node:http2";
import * as net from "node:net";
import { Counter } from "@platform/test-support";
import { readEnv } from "../config/config.js";
import { createLogger } from "../observability/logger.js";
import { serve, type RunningServer } from "./serve.js";
import { readServerConfig } from "../config/server-config.js";

const drainTimeoutMs = 2000;
/** serve()'s wait for aborted handlers to write their answer after the drain. */
const graceMs = 500;
/** listen.ts's longest wait for the notice's acknowledgement before the final GOAWAY. */
const noticeAckWaitMs = 1000;

/** Relays a port; what the server sends can be held back. */
async function relay(to: number) {
  let holding = false;
  const held: Buffer[] = [];
  let serverGone = false;
  let client: net.Socket | undefined;
  let upstream: net.Socket | undefined;
  const server = net.createServer((c) => {
    client = c;
    const u = net.connect(to, "127.0.0.1");
    upstream = u;
    c.on("data", (d) => u.write(d));
    u.on("data", (d) => (holding ? held.push(d) : c.write(d)));
    for (const s of [c, u]) s.on("error", () => {});
    c.on("close", () => u.destroy());
    u.on("close", () => {
      serverGone = true;
      if (!holding) c.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as net.AddressInfo).port,
    hold: () => (holding = true),
    holdsSomething: () => held.length > 0,
    release() {
      holding = false;
      for (const b of held.splice(0)) client?.write(b);
      if (serverGone) client?.end();
    },
    close() {
      client?.destroy();
      upstream?.destroy();
      server.close();
    },
  };
}

/** One Connect unary call (binary): "ok", the Connect error code, or the stream's error. */
function get(session: http2.ClientHttp2Session): Promise<string> {
  return new Promise((resolve) => {
    const s = session.request({ ":method": "POST", ":path": "/test.v1.Counter/Get", "content-type": "application/proto" });
    let status = 0;
    let body = "";
    s.on("response", (h) => (status = Number(h[":status"])));
    s.on("data", (d: Buffer) => (body += d.toString()));
    s.on("end", () => resolve(status === 200 ? "ok" : String((JSON.parse(body) as { code: string }).code)));
    s.on("error", (e: Error) => resolve(`stream error: ${e.message}`));
    s.end();
  });
}

const turns = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

let server: RunningServer;
beforeEach(async () => {
  const env = { PORT: "0", ADMIN_PORT: "0", DRAIN_TIMEOUT_MS: String(drainTimeoutMs) };
  const config = readEnv(env, (r) => readServerConfig(r, "shutdown-test", { port: 0, adminPort: 0, edge: false }));
  server = await serve({
    config,
    logger: createLogger("shutdown-test", "silent"),
    services: [Counter],
    routes(router) {
      router.service(Counter, { async get() {}, async *count() {} } as never);
    },
  });
  await server.ready;
});
afterEach(() => mock.timers.reset());

/** A session through a relay, one call made; then what the server sends is held and the shutdown starts. */
async function shutdownUnseen() {
  const r = await relay(server.port);
  const session = http2.connect(`http://127.0.0.1:${r.port}`);
  session.on("error", () => {});
  assert.equal(await get(session), "ok");
  mock.timers.enable({ apis: ["setTimeout"] });
  r.hold();
  let stopped = false;
  const shutdown = server.shutdown("test").then(() => (stopped = true));
  while (!r.holdsSomething()) await turns(1); // the notice and its PING
  return { r, session, shutdown, stopped: () => stopped };
}

test("a stream opened before the client saw the shutdown notice is answered, not refused, though the client acknowledges after the grace", async () => {
  const { r, session, shutdown } = await shutdownUnseen();
  try {
    mock.timers.tick(graceMs); // nothing in flight: the drain is over, and so is the grace
    await turns();
    const late = get(session); // reaches the server: only what the server sends is held
    await turns();
    r.release();
    const outcome = await late;
    assert.ok(outcome === "ok" || outcome === "unavailable", `the late stream got ${outcome}`);
    await shutdown; // once the session closed, before the bound
  } finally {
    session.destroy();
    r.close();
  }
});

test("a client that never acknowledges the notice: the shutdown waits past the grace for the session's final GOAWAY (1 s after the notice), then ends", async () => {
  const { r, session, shutdown, stopped } = await shutdownUnseen();
  try {
    mock.timers.tick(graceMs);
    await turns();
    assert.equal(stopped(), false, "the session is not cut at the end of the grace");
    mock.timers.tick(noticeAckWaitMs - graceMs);
    await shutdown;
  } finally {
    session.destroy();
    r.close();
  }
});
