/**
 * One request context per request: the deadline header is parsed once,
 * when the context is built; the deadline counts from arrival; one timer
 * fires at it; and the interceptors work from the context, not from the
 * headers (a context whose deadline disagrees with the header wins).
 */
import { afterEach, beforeEach, describe, mock, test } from "node:test";
import assert from "node:assert/strict";
import { createClient, createRouterTransport, type Interceptor } from "@connectrpc/connect";
import { currentScope, parseTimeoutHeader, type CallScope } from "@platform/resilience";
import { Counter } from "@platform/test-support";
import { inOrder, serverInterceptors } from "./server-interceptors.js";
import { createLogger } from "../observability/logger.js";
import { createRequestContext, requestContext, requestContextValues, type RequestContext } from "./request-context.js";

const deadline = { defaultMs: 3000, maxMs: 30_000 };

/** A parser that counts its calls. */
function countingParser(): { parse: typeof parseTimeoutHeader; calls: () => number } {
  let n = 0;
  return {
    parse: (name, value) => {
      n++;
      return parseTimeoutHeader(name, value);
    },
    calls: () => n,
  };
}

const headers = (h: Record<string, string>) => (name: string) => h[name];

describe("createRequestContext", () => {
  /** A clock that moves with the mocked timers. */
  let clock = 0;
  const now = () => clock;
  const advance = (ms: number) => {
    clock += ms;
    mock.timers.tick(ms);
  };
  beforeEach(() => {
    mock.timers.enable({ apis: ["setTimeout"] });
    clock = 0;
  });
  afterEach(() => mock.timers.reset());

  test("parses the deadline header once and counts the deadline from arrival", () => {
    const p = countingParser();
    const c = createRequestContext({
      header: headers({ "grpc-timeout": "250m" }),
      procedure: "/x.v1.X/Y",
      arrivedAt: 1000,
      deadline,
      trustCaller: true,
      parse: p.parse,
      now: () => 1040,
    });
    assert.equal(p.calls(), 1);
    assert.equal(c.timeoutMs, 250);
    assert.equal(c.deadlineSource, "client");
    assert.equal(c.deadlineAt, 1250, "from arrival, not from when the context was built");
    c.dispose();
  });

  test("caps a deadline above the maximum, applies the default when none (or a malformed one) was sent", () => {
    const capped = createRequestContext({ header: headers({ "connect-timeout-ms": "3600000" }), procedure: "/x", arrivedAt: 0, deadline, trustCaller: true });
    assert.deepEqual([capped.timeoutMs, capped.deadlineSource], [30_000, "capped"]);
    const none = createRequestContext({ header: headers({}), procedure: "/x", arrivedAt: 0, deadline, trustCaller: true });
    assert.deepEqual([none.timeoutMs, none.deadlineSource], [3000, "default"]);
    const malformed = createRequestContext({ header: headers({ "grpc-timeout": "soon" }), procedure: "/x", arrivedAt: 0, deadline, trustCaller: true });
    assert.deepEqual([malformed.timeoutMs, malformed.deadlineSource], [3000, "default"]);
    for (const c of [capped, none, malformed]) c.dispose();
  });

  test("its one timer aborts the deadline signal at the deadline, not before; dispose() clears it", () => {
    const c = createRequestContext({ header: headers({ "connect-timeout-ms": "100" }), procedure: "/x", arrivedAt: 0, deadline, trustCaller: true, now });
    advance(99);
    assert.equal(c.deadline.aborted, false);
    advance(1);
    assert.equal(c.deadline.aborted, true);
    assert.equal(c.deadline.reason, "deadline");
    const disposed = createRequestContext({
      header: headers({ "connect-timeout-ms": "100" }),
      procedure: "/x",
      arrivedAt: clock,
      deadline,
      trustCaller: true,
      now,
    });
    disposed.dispose();
    advance(200);
    assert.equal(disposed.deadline.aborted, false);
  });

  test("the same timer first ends the request's calls, a hop reserve before the deadline, then the deadline", () => {
    const c = createRequestContext({
      header: headers({ "connect-timeout-ms": "100" }),
      procedure: "/x",
      arrivedAt: 0,
      deadline: { ...deadline, hopReserveMs: 5 },
      trustCaller: true,
      now,
    });
    advance(94);
    assert.deepEqual([c.callsEnd.aborted, c.deadline.aborted], [false, false]);
    advance(1);
    assert.deepEqual([c.callsEnd.aborted, c.deadline.aborted], [true, false], "calls end with the reserve left to answer");
    advance(5);
    assert.deepEqual([c.callsEnd.aborted, c.deadline.aborted], [true, true]);
    c.dispose();
  });

  test("the calls' end read only after it passed is aborted, with the deadline as its reason", () => {
    const c = createRequestContext({
      header: headers({ "connect-timeout-ms": "100" }),
      procedure: "/x",
      arrivedAt: 0,
      deadline: { ...deadline, hopReserveMs: 5 },
      trustCaller: true,
      now,
    });
    advance(96);
    assert.deepEqual([c.callsEnd.aborted, c.callsEnd.reason, c.deadline.aborted], [true, "deadline", false]);
    assert.equal(c.callsEnd, c.callsEnd, "one signal, however often read");
    c.dispose();
  });

  test("takes the caller's request id when well-formed and the caller identity only where trusted", () => {
    const h = headers({ "x-request-id": "req-1", "x-caller-id": "mallory" });
    const inner = createRequestContext({ header: h, procedure: "/x", arrivedAt: 0, deadline, trustCaller: true });
    const edge = createRequestContext({ header: h, procedure: "/x", arrivedAt: 0, deadline, trustCaller: false });
    assert.equal(inner.requestId, "req-1");
    assert.equal(inner.caller, "mallory");
    assert.equal(edge.caller, undefined, "the edge decides the caller itself");
    const hostile = createRequestContext({ header: headers({ "x-request-id": "a b\n" }), procedure: "/x", arrivedAt: 0, deadline, trustCaller: true });
    assert.notEqual(hostile.requestId, "a b\n");
    for (const c of [inner, edge, hostile]) c.dispose();
  });
});

describe("the server interceptors work from the request context", () => {
  /** Serves Counter in memory with `context` handed in as serve() would; returns what the handler saw. */
  async function serveWith(context: RequestContext) {
    const seen: { scope?: CallScope; context?: RequestContext } = {};
    const handOver: Interceptor = (next) => (req) => next({ ...req, contextValues: requestContextValues(context, req.contextValues) });
    const transport = createRouterTransport(
      (router) =>
        router.service(Counter, {
          get: (_req: unknown, ctx: Parameters<typeof requestContext>[0]) => {
            seen.scope = currentScope();
            seen.context = requestContext(ctx);
            return {};
          },
          async *count() {},
        } as never),
      {
        router: {
          interceptors: [
            handOver,
            ...inOrder(
              serverInterceptors({
                deadline: { ...deadline, edge: false },
                logger: createLogger("spec", "silent"),
                shutdownSignal: new AbortController().signal,
              }),
            ),
          ],
        },
      },
    );
    // The header says 9 s; the context (parsed once, at arrival) says 500 ms.
    const client = createClient(Counter, transport) as unknown as { get(req: object, opts: object): Promise<unknown> };
    await client.get({}, { headers: { "grpc-timeout": "9S", "x-request-id": "from-header" } });
    return seen;
  }

  test("the handler's scope takes the context's deadline and ids, and nothing parses the header again", async () => {
    const p = countingParser();
    const arrivedAt = performance.now();
    const context = createRequestContext({
      header: headers({ "grpc-timeout": "500m", "x-request-id": "from-context" }),
      procedure: "/test.v1.Counter/Get",
      arrivedAt,
      deadline,
      trustCaller: true,
      parse: p.parse,
    });
    try {
      const seen = await serveWith(context);
      assert.equal(p.calls(), 1, "parsed once, when the context was built");
      assert.equal(seen.context, context, "the handler sees the very context serve() built");
      assert.equal(seen.scope?.deadlineAt, arrivedAt + 500, "the scope's deadline is the context's, counted from arrival");
      assert.equal(seen.scope?.requestId, "from-context");
      assert.equal(context.logged, true, "the interceptors own the request's log line");
    } finally {
      context.dispose();
    }
  });
});
