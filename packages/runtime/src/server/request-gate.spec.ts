/**
 * Refusals from the request gate (auth, rate limit, "starting") reach every
 * protocol in its own form, written by Connect: a real serve() on real
 * HTTP/1.1 and h2c, called by connect-es's own clients and with raw bytes.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { healthV1 } from "@platform/proto";
import { Counter } from "@platform/test-support";
import { readEnv } from "../config/config.js";
import { pino } from "pino";
import { serve, type RunningServer } from "./serve.js";
import { createEdge } from "../edge/edge.js";
import { propagatedCriticality } from "./admission-gate.js";
import { readServerConfig } from "../config/server-config.js";

const key = randomUUID();
/** One caller per request while starting: each has a burst of two (a unary and a streaming call). */
const starters = Array.from({ length: 8 }, () => randomUUID());
let server: RunningServer;
const logLines: Record<string, unknown>[] = [];
let baseUrl: string;
let becomeReady: () => void;

before(async () => {
  const config = readEnv({ PORT: "0", ADMIN_PORT: "0" }, (r) => readServerConfig(r, "gate-test", { port: 0, adminPort: 0, edge: true }));
  server = await serve({
    config,
    logger: pino({ level: "info" }, { write: (line: string) => void logLines.push(JSON.parse(line) as Record<string, unknown>) }),
    services: [Counter],
    routes(router) {
      // Typed by hand: a DescService built at run time has no static method types.
      const impl = {
        get: () => ({}),
        async *count() {
          yield {};
        },
      };
      router.service(Counter, impl as never);
    },
    http1: true,
    edge: createEdge({
      auth: { mode: "api-key", keys: new Map([["alice", key], ...starters.map((k, i) => [`starter-${i}`, k] as [string, string])]) },
      rateLimit: { perSecond: 0.001, burst: 2 },
      cors: { allowedOrigins: [] },
      criticality: propagatedCriticality,
    }),
    startup: { ready: new Promise<void>((resolve) => (becomeReady = resolve)), waitingFor: "the test" },
  });
  baseUrl = `http://127.0.0.1:${server.port}`;
});
after(async () => {
  becomeReady?.();
  await server?.shutdown("test over");
});

const transports: Record<string, () => Transport> = {
  "connect h1": () => createConnectTransport({ baseUrl, httpVersion: "1.1" }),
  "connect h2": () => createConnectTransport({ baseUrl, httpVersion: "2" }),
  "grpc h2": () => createGrpcTransport({ baseUrl }),
  "grpc-web h1": () => createGrpcWebTransport({ baseUrl, httpVersion: "1.1" }),
};

/** Calls Get (unary) and Count (server streaming); returns each outcome's error, or "ok". */
async function callBoth(transport: Transport, headers: Record<string, string>): Promise<Record<"unary" | "stream", ConnectError | "ok">> {
  const client = createClient(Counter, transport) as unknown as {
    get(req: object, o: object): Promise<unknown>;
    count(req: object, o: object): AsyncIterable<unknown>;
  };
  const outcome = async (f: () => Promise<unknown>) => {
    try {
      await f();
      return "ok" as const;
    } catch (e) {
      return ConnectError.from(e);
    }
  };
  return {
    unary: await outcome(() => client.get({}, { headers })),
    stream: await outcome(async () => {
      for await (const _ of client.count({}, { headers })) void _;
    }),
  };
}

describe("request gate refusals, in each protocol's form", () => {
  test("while starting: UNAVAILABLE naming what start-up waits for, unary and streaming, with the request id; health answers", async () => {
    for (const [i, [name, transport]] of Object.entries(transports).entries()) {
      const requestId = `gate-${randomUUID()}`;
      const got = await callBoth(transport(), { authorization: `Bearer ${starters[i]}`, "x-request-id": requestId });
      for (const [kind, e] of Object.entries(got)) {
        assert.ok(e instanceof ConnectError, `${name} ${kind}: ${String(e)}`);
        assert.equal(Code[e.code], "Unavailable", `${name} ${kind}: ${e.message}`);
        assert.equal(e.rawMessage, "starting: waiting for the test", `${name} ${kind}`);
        assert.equal(e.metadata.get("x-request-id"), requestId, `${name} ${kind}: the request id`);
      }
      // One log line per refusal, as for a request a handler answered.
      const lines = logLines.filter((l) => l["requestId"] === requestId);
      assert.deepEqual(
        lines.map((l) => [l["msg"], l["procedure"], l["code"]]),
        [
          ["rpc refused before the handler", "/test.v1.Counter/Get", "unavailable"],
          ["rpc refused before the handler", "/test.v1.Counter/Count", "unavailable"],
        ],
        name,
      );
    }
    assert.equal(
      logLines.filter((l) => l["msg"] === "rpc refused before the handler" && l["requestId"] === undefined).length,
      0,
      "no second line from serve()'s fallback",
    );
    const health = createClient(healthV1.Health, createGrpcTransport({ baseUrl }));
    assert.equal((await health.check({ service: "" })).status, healthV1.HealthCheckResponse_ServingStatus.NOT_SERVING);
  });

  test("on the wire: Connect unary is an HTTP status with a JSON error, Connect streaming an end-of-stream frame, gRPC-Web a status", async () => {
    let caller = 4;
    const post = (contentType: string, body: Uint8Array) =>
      fetch(`${baseUrl}/test.v1.Counter/${contentType.includes("connect+") || contentType.includes("grpc") ? "Count" : "Get"}`, {
        method: "POST",
        headers: { "content-type": contentType, authorization: `Bearer ${starters[caller++]}` },
        body,
      });
    const unary = await post("application/json", new TextEncoder().encode("{}"));
    assert.equal(unary.status, 503);
    const starting = { code: "unavailable", message: "starting: waiting for the test" };
    // ErrorInfo STARTING (docs/errors.md) as a Connect error detail: its type, and its value as JSON in "debug".
    type ErrorBody = { code: string; message: string; details?: { type: string; debug?: { reason?: string } }[] };
    const startingDetail = (error: ErrorBody) => error.details?.map((d) => [d.type, d.debug?.reason]);
    const unaryError = (await unary.json()) as ErrorBody;
    assert.deepEqual({ code: unaryError.code, message: unaryError.message }, starting);
    assert.deepEqual(startingDetail(unaryError), [["google.rpc.ErrorInfo", "STARTING"]]);

    // Before requestGate this was the unary form (HTTP 503, a JSON body), which a Connect streaming client misreads.
    const envelope = new Uint8Array([0, 0, 0, 0, 2, 0x7b, 0x7d]);
    const stream = await post("application/connect+json", envelope);
    assert.equal(stream.status, 200);
    assert.equal(stream.headers.get("content-type"), "application/connect+json");
    const bytes = Buffer.from(await stream.arrayBuffer());
    assert.equal(bytes[0], 0x02, "an end-of-stream frame");
    const { error: streamError } = JSON.parse(bytes.subarray(5).toString("utf8")) as { error: ErrorBody };
    assert.deepEqual({ code: streamError.code, message: streamError.message }, starting);
    assert.deepEqual(startingDetail(streamError), [["google.rpc.ErrorInfo", "STARTING"]]);

    const web = await post("application/grpc-web+proto", new Uint8Array([0, 0, 0, 0, 0]));
    assert.equal(web.status, 200);
    const trailer = Buffer.from(await web.arrayBuffer());
    assert.equal(trailer[0], 0x80, "a gRPC-Web trailer frame");
    assert.match(trailer.subarray(5).toString("latin1"), /^grpc-message: starting: waiting for the test\r\ngrpc-status: 14\r\n/);
  });

  test("once ready: no key is UNAUTHENTICATED; over the client's rate, RESOURCE_EXHAUSTED with both pushback headers", async () => {
    becomeReady();
    await server.ready;
    for (const [name, transport] of Object.entries(transports)) {
      const got = await callBoth(transport(), {});
      for (const [kind, e] of Object.entries(got)) {
        assert.ok(e instanceof ConnectError && e.code === Code.Unauthenticated, `${name} ${kind}: ${String(e)}`);
        assert.match(e.rawMessage, /^authentication required/);
      }
    }
    // The first two calls spend alice's burst; the rate refills a token in about 17 minutes.
    assert.deepEqual(await callBoth(transports["grpc h2"]!(), { authorization: `Bearer ${key}` }), { unary: "ok", stream: "ok" });
    for (const [name, transport] of Object.entries(transports)) {
      const got = await callBoth(transport(), { authorization: `Bearer ${key}` });
      for (const [kind, e] of Object.entries(got)) {
        assert.ok(e instanceof ConnectError && e.code === Code.ResourceExhausted, `${name} ${kind}: ${String(e)}`);
        assert.equal(e.rawMessage, "rate limit exceeded for this client; slow down");
        assert.ok(
          Number(e.metadata.get("grpc-retry-pushback-ms")) > 1000,
          `${name} ${kind}: grpc-retry-pushback-ms ${e.metadata.get("grpc-retry-pushback-ms")}`,
        );
        assert.ok(Number(e.metadata.get("retry-after")) > 1, `${name} ${kind}: retry-after ${e.metadata.get("retry-after")}`);
      }
    }
  });
});
