// npm test: own process (it counts every timer the process arms, and other specs' servers arm theirs)
/**
 * One deadline per hop, counted on a real serve() over h2c: each request's
 * timeout header is parsed once (by the request context) and one timer is
 * armed for its deadline, in all three protocols; connect-node sees neither
 * the header nor a timer of its own. And what that must not change: a
 * deadline still ends the handler's signal and is answered
 * DEADLINE_EXCEEDED in the caller's protocol, a caller that goes away still
 * ends it, and a malformed or oversized deadline is still refused with
 * INVALID_ARGUMENT and Connect's own words.
 *
 * Requests go out through node:http2 directly: a Connect client would arm
 * timers of its own in this process and blur the count.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import * as http2 from "node:http2";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { parseTimeoutHeader } from "@platform/resilience";
import { Counter } from "@platform/test-support";
import { readEnv } from "../config/config.js";
import { createLogger } from "../observability/logger.js";
import { requestContext } from "../server/request-context.js";
import type { RunningServer } from "../server/serve.js";
import { serveWithHooks } from "../testing.js";
import { readServerConfig } from "../config/server-config.js";

interface Seen {
  /** Connect's own reading of the deadline (`ctx.timeoutMs()`): defined only when connect-node parsed a timeout header itself. */
  connectTimeoutMs: number | undefined;
  /** Whether the handler (and so connect-node) was shown a timeout header. */
  timeoutHeaderShown: boolean;
  /** The deadline from the request context, ms from arrival. */
  contextTimeoutMs: number | undefined;
  /** Settles with the handler signal's reason once it aborts. */
  aborted: Promise<unknown>;
}

let server: RunningServer;
let session: http2.ClientHttp2Session;
let parses = 0;
const seen: Seen[] = [];
/** Get answers at once; with x-wait it waits for its signal, then throws what the signal carries. */
const impl = {
  async get(_req: unknown, ctx: HandlerContext) {
    const aborted = new Promise<unknown>((resolve) => {
      if (ctx.signal.aborted) resolve(ctx.signal.reason);
      ctx.signal.addEventListener("abort", () => resolve(ctx.signal.reason), { once: true });
    });
    seen.push({
      connectTimeoutMs: ctx.timeoutMs(),
      timeoutHeaderShown: ctx.requestHeader.has("grpc-timeout") || ctx.requestHeader.has("connect-timeout-ms"),
      contextTimeoutMs: requestContext(ctx)?.timeoutMs,
      aborted,
    });
    if (ctx.requestHeader.get("x-wait") === "1") throw await aborted;
    return {};
  },
  async *count() {},
};

before(async () => {
  const config = readEnv({ PORT: "0", ADMIN_PORT: "0" }, (r) => readServerConfig(r, "hop-deadline-spec", { port: 0, adminPort: 0, edge: false }));
  server = await serveWithHooks(
    {
      config,
      logger: createLogger("hop-deadline-spec", "silent"),
      services: [Counter],
      routes: (router) => router.service(Counter, impl as never),
    },
    {
      parseTimeout: (name, value) => {
        parses++;
        return parseTimeoutHeader(name, value);
      },
    },
  );
  await server.ready;
  session = http2.connect(`http://127.0.0.1:${server.port}`);
});
after(async () => {
  session?.close();
  await server?.shutdown("spec over");
});

type Protocol = "grpc" | "grpc-web" | "connect";
const frame = Buffer.from([0, 0, 0, 0, 0]); // one empty message, uncompressed
const request: Record<Protocol, { contentType: string; timeoutHeader: string; body: Buffer }> = {
  grpc: { contentType: "application/grpc", timeoutHeader: "grpc-timeout", body: frame },
  "grpc-web": { contentType: "application/grpc-web+proto", timeoutHeader: "grpc-timeout", body: frame },
  connect: { contentType: "application/proto", timeoutHeader: "connect-timeout-ms", body: Buffer.alloc(0) },
};

interface Answer {
  status: number;
  /** grpc-status / Connect error code, and message (gRPC-Web's are in the body's trailer frame). */
  code: string | undefined;
  message: string | undefined;
}

/** Sends one raw request; resolves with its answer once the stream closes. */
function send(path: string, headers: Record<string, string>, body: Buffer, opts: { cancelAfterHeaders?: boolean } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ":method": "POST", ":path": path, te: "trailers", ...headers });
    let status = 0;
    let trailers: http2.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.on("response", (h) => (status = Number(h[":status"])));
    stream.on("trailers", (t) => (trailers = t));
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("error", reject);
    stream.on("close", () => {
      const bodyText = Buffer.concat(chunks).toString("latin1");
      const grpcWeb = /grpc-status:\s*(\d+)/i.exec(bodyText);
      const grpcWebMessage = /grpc-message:\s*([^\r\n]*)/i.exec(bodyText);
      if (trailers["grpc-status"] !== undefined) {
        resolve({ status, code: String(trailers["grpc-status"]), message: decodeURIComponent(String(trailers["grpc-message"] ?? "")) });
      } else if (grpcWeb) {
        resolve({ status, code: grpcWeb[1], message: decodeURIComponent(grpcWebMessage?.[1] ?? "") });
      } else if (status !== 200 && bodyText.startsWith("{")) {
        const e = JSON.parse(bodyText) as { code: string; message: string };
        resolve({ status, code: e.code, message: e.message });
      } else resolve({ status, code: status === 200 ? "ok" : undefined, message: undefined });
    });
    if (opts.cancelAfterHeaders) {
      stream.write(body);
      setImmediate(() => stream.close(http2.constants.NGHTTP2_CANCEL));
    } else stream.end(body);
  });
}

/** Counts the timers armed (setTimeout calls) in this process while `work` runs. */
async function timersArmedDuring<T>(work: () => Promise<T>): Promise<{ result: T; timers: number }> {
  const original = globalThis.setTimeout;
  let timers = 0;
  globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
    timers++;
    return original(...args);
  }) as typeof setTimeout;
  try {
    const result = await work();
    return { result, timers };
  } finally {
    globalThis.setTimeout = original;
  }
}

const get = "/test.v1.Counter/Get";

describe("one deadline per hop", () => {
  for (const protocol of ["grpc", "grpc-web", "connect"] as const) {
    test(`${protocol}: the timeout header is parsed once and one timer is armed for the deadline`, async () => {
      const r = request[protocol];
      const value = protocol === "connect" ? "5000" : "5S";
      // Warm the connection and the route first, so that only the request is counted.
      assert.equal((await send(get, { "content-type": r.contentType }, r.body)).code, protocol === "connect" ? "ok" : "0");
      seen.length = 0;
      parses = 0;
      const { result, timers } = await timersArmedDuring(() => send(get, { "content-type": r.contentType, [r.timeoutHeader]: value }, r.body));
      assert.equal(result.code, protocol === "connect" ? "ok" : "0");
      const [handler] = seen;
      assert.ok(handler);
      // connect-node parses a header it is shown into ctx.timeoutMs(): its parse shows there.
      const connectParses = handler.connectTimeoutMs === undefined ? 0 : 1;
      assert.deepEqual(
        { parses: parses + connectParses, timers },
        { parses: 1, timers: 1 },
        `ours ${parses}, connect-node's ${connectParses}; timers armed ${timers}`,
      );
      assert.equal(handler.timeoutHeaderShown, false, "the header is consumed by the hop: connect-node never sees it");
      assert.equal(handler.contextTimeoutMs, 5000, "the request context holds the deadline");
    });
  }
});

describe("the deadline behaves as before", () => {
  for (const protocol of ["grpc", "grpc-web", "connect"] as const) {
    test(`${protocol}: past its deadline a call is answered DEADLINE_EXCEEDED and the handler's signal aborts with Connect's deadline error`, async () => {
      seen.length = 0;
      const r = request[protocol];
      const answer = await send(get, { "content-type": r.contentType, [r.timeoutHeader]: protocol === "connect" ? "50" : "50m", "x-wait": "1" }, r.body);
      const expected = protocol === "connect" ? { status: 504, code: "deadline_exceeded" } : { status: 200, code: String(Code.DeadlineExceeded) };
      assert.deepEqual(
        { status: answer.status, code: answer.code, message: answer.message },
        { ...expected, message: "deadline exceeded before the request completed" },
      );
      const reason = await seen[0]!.aborted;
      assert.ok(reason instanceof ConnectError, `aborted with ${String(reason)}`);
      assert.equal(reason.code, Code.DeadlineExceeded);
    });
  }

  test("a caller that goes away ends the handler's signal", async () => {
    seen.length = 0;
    await send(get, { "content-type": "application/grpc", "grpc-timeout": "30S", "x-wait": "1" }, frame, { cancelAfterHeaders: true }).catch(() => undefined);
    while (seen.length === 0) await new Promise((r) => setImmediate(r));
    const reason = await seen[0]!.aborted;
    assert.notEqual(ConnectError.from(reason).code, Code.DeadlineExceeded, "cancelled, not timed out");
  });

  test("a malformed or oversized deadline of the request's own protocol is refused with INVALID_ARGUMENT, in Connect's words", async () => {
    const grpc = await send(get, { "content-type": "application/grpc", "grpc-timeout": "abc" }, frame);
    assert.deepEqual([grpc.code, grpc.message], [String(Code.InvalidArgument), "protocol error: invalid grpc timeout value: abc"]);
    const web = await send(get, { "content-type": "application/grpc-web+proto", "grpc-timeout": "100000000H" }, frame);
    assert.deepEqual([web.code, web.message], [String(Code.InvalidArgument), "protocol error: invalid grpc timeout value: 100000000H"]);
    const connect = await send(get, { "content-type": "application/proto", "connect-timeout-ms": "soon" }, Buffer.alloc(0));
    assert.deepEqual([connect.status, connect.code, connect.message], [400, "invalid_argument", "protocol error: invalid connect timeout value: soon"]);
    const oversized = await send(get, { "content-type": "application/grpc", "grpc-timeout": "99999999H" }, frame);
    assert.deepEqual([oversized.code, oversized.message], [String(Code.InvalidArgument), "timeout 359999996400000ms must be <= 2147483647"]);
    const health = await send("/grpc.health.v1.Health/Check", { "content-type": "application/grpc", "grpc-timeout": "1.5S" }, frame);
    assert.deepEqual([health.code, health.message], [String(Code.InvalidArgument), "protocol error: invalid grpc timeout value: 1.5S"], "health checks too");
  });

  test("the other protocol's timeout header is not the request's: a malformed one is ignored, as connect-node ignores it", async () => {
    const connect = await send(get, { "content-type": "application/proto", "grpc-timeout": "abc" }, Buffer.alloc(0));
    assert.equal(connect.code, "ok");
    const grpc = await send(get, { "content-type": "application/grpc", "connect-timeout-ms": "soon" }, frame);
    assert.equal(grpc.code, "0");
  });
});
