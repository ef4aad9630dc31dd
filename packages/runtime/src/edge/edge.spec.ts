/**
 * The edge's checks on their own: authentication sets the caller the inner
 * hops trust (a spoofed x-caller-id is ignored), the rate limit is per
 * client, and the criticality policy is the one the gateway gave it. Over
 * the wire in every protocol: request-gate.spec.ts.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Code, type ConnectError, createHandlerContext, type HandlerContext } from "@connectrpc/connect";
import { Counter } from "@platform/test-support";
import { createEdge } from "./edge.js";
import { createRequestContext, type RequestContext } from "../server/request-context.js";

const key = "k".repeat(32);
const edge = createEdge({
  auth: { mode: "api-key", keys: new Map([["alice", key]]) },
  rateLimit: { perSecond: 0.001, burst: 1 },
  cors: { allowedOrigins: [] },
  criticality: (procedure) => (procedure.endsWith("/Get") ? "sheddable" : "critical"),
});

function call(headers: Record<string, string>): { context: HandlerContext; request: RequestContext } {
  const method = Counter.methods[0]!;
  const context = createHandlerContext({
    service: Counter,
    method,
    protocolName: "connect",
    requestMethod: "POST",
    url: "http://edge/test.v1.Counter/Get",
    requestHeader: headers,
  });
  const request = createRequestContext({
    header: (n) => headers[n],
    procedure: "/test.v1.Counter/Get",
    arrivedAt: 0,
    deadline: { defaultMs: 3000, maxMs: 30_000 },
    trustCaller: false,
  });
  request.dispose();
  return { context, request };
}

test("a valid key sets the caller from the key, whatever x-caller-id the client sent", () => {
  const { context, request } = call({ authorization: `Bearer ${key}`, "x-caller-id": "mallory" });
  edge.check(context, request);
  assert.equal(request.caller, "alice");
});

test("no key or a wrong one is refused UNAUTHENTICATED; past the client's burst, RESOURCE_EXHAUSTED with a pushback hint", () => {
  for (const headers of [{}, { authorization: "Bearer wrong-key-wrong-key-wrong" }] as Record<string, string>[]) {
    const { context, request } = call(headers);
    assert.throws(
      () => edge.check(context, request),
      (e: ConnectError) => e.code === Code.Unauthenticated,
    );
  }
  const limited = createEdge({
    auth: { mode: "api-key", keys: new Map([["bob", key]]) },
    rateLimit: { perSecond: 0.001, burst: 1 },
    cors: { allowedOrigins: [] },
    criticality: () => "critical",
  });
  const first = call({ authorization: `Bearer ${key}` });
  limited.check(first.context, first.request);
  const second = call({ authorization: `Bearer ${key}` });
  assert.throws(
    () => limited.check(second.context, second.request),
    (e: ConnectError) => e.code === Code.ResourceExhausted && Number(e.metadata.get("grpc-retry-pushback-ms")) > 0,
  );
});

test("the criticality policy is the gateway's, by procedure", () => {
  assert.equal(edge.criticality("/test.v1.Counter/Get", new Headers({ "x-criticality": "critical" })), "sheddable");
  assert.equal(edge.criticality("/checkout.v1.CheckoutService/PlaceOrder", new Headers()), "critical");
});
