// npm test: own process (it reads prom-client's global registry, which every spec's interceptors in a shared process also write)
/**
 * The deadline interceptor runs the handler in a call scope built from the
 * request context, and answers for a handler that ignores its signal: at
 * the deadline DEADLINE_EXCEEDED, when the caller leaves CANCELLED, at the
 * end of a shutdown's drain UNAVAILABLE; a request without a deadline gets
 * the fallback, counted (and logged below the edge).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Code, ConnectError } from "@connectrpc/connect";
import { abortReason, currentScope, type CallScope } from "@platform/resilience";
import { deadlineInterceptor } from "./deadline-interceptor.js";
import { register } from "../observability/metrics.js";
import { capturingLogger, inMemoryGet } from "../testing/in-memory-server.js";

const procedure = "/test.v1.Counter/Get";

function chain(opts: { edge?: boolean; shutdown?: AbortSignal } = {}) {
  const { logger, lines } = capturingLogger();
  const interceptor = deadlineInterceptor({
    deadline: { edge: opts.edge ?? false, defaultMs: 3000, maxMs: 30_000 },
    logger,
    shutdownSignal: opts.shutdown ?? new AbortController().signal,
  });
  return { interceptor, lines };
}

/** A handler that never answers by itself, and records its scope. */
function hanging(seen: { scope?: CallScope }) {
  return () => {
    seen.scope = currentScope();
    return new Promise<object>(() => {});
  };
}

async function counter(name: string, labels: Record<string, string>): Promise<number> {
  const m = await register.getSingleMetric(name)?.get();
  return m?.values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value ?? 0;
}

test("the handler runs in a scope with the request's deadline and ids", async () => {
  const { interceptor } = chain();
  let scope: CallScope | undefined;
  await inMemoryGet([interceptor], () => {
    scope = currentScope();
    return {};
  })({ headers: { "x-request-id": "scoped", "x-caller-id": "alice" }, timeoutMs: 5000 });
  assert.equal(scope?.requestId, "scoped");
  assert.equal(scope?.caller, "alice");
  assert.equal(scope?.procedure, procedure);
  assert.ok(scope !== undefined && scope.deadlineAt - performance.now() <= 5000, "the caller's deadline, counted from arrival");
});

test("a handler that ignores its signal is answered DEADLINE_EXCEEDED at the deadline, its scope ended for the deadline", async () => {
  const { interceptor } = chain();
  const seen: { scope?: CallScope } = {};
  const err = await inMemoryGet([interceptor], hanging(seen))({ timeoutMs: 30 }).catch((e: unknown) => ConnectError.from(e));
  assert.ok(err instanceof ConnectError);
  assert.equal(err.code, Code.DeadlineExceeded);
  assert.equal(abortReason(seen.scope!), "deadline");
});

test("a caller that leaves ends the scope as cancelled", async () => {
  const { interceptor } = chain();
  const seen: { scope?: CallScope } = {};
  const caller = new AbortController();
  const call = inMemoryGet([interceptor], hanging(seen))({ signal: caller.signal, timeoutMs: 60_000 }).catch((e: unknown) => ConnectError.from(e));
  while (seen.scope === undefined) await new Promise((r) => setImmediate(r));
  caller.abort();
  await call;
  assert.equal(abortReason(seen.scope), "cancelled");
});

test("at the end of a shutdown's drain the handler is answered UNAVAILABLE", async () => {
  const shutdown = new AbortController();
  const { interceptor } = chain({ shutdown: shutdown.signal });
  const seen: { scope?: CallScope } = {};
  const call = inMemoryGet([interceptor], hanging(seen))({ timeoutMs: 60_000 }).catch((e: unknown) => ConnectError.from(e));
  while (seen.scope === undefined) await new Promise((r) => setImmediate(r));
  shutdown.abort("shutdown");
  const err = await call;
  assert.ok(err instanceof ConnectError);
  assert.equal(err.code, Code.Unavailable);
  assert.match(err.rawMessage, /shutting down/);
});

test("below the edge a request without a deadline gets the fallback, is counted and logged; at the edge only counted", async () => {
  const before = await counter("deadline_missing_total", { procedure });
  const inner = chain({ edge: false });
  let scope: CallScope | undefined;
  const handler = () => {
    scope = currentScope();
    return {};
  };
  await inMemoryGet([inner.interceptor], handler)({ headers: { "x-request-id": "no-deadline" } });
  assert.ok(scope !== undefined && Math.round(scope.deadlineAt - performance.now()) <= 3000);
  assert.equal(inner.lines.filter((l) => l["requestId"] === "no-deadline" && /without a deadline/.test(String(l["msg"]))).length, 1);
  const edge = chain({ edge: true });
  await inMemoryGet([edge.interceptor], handler)();
  assert.equal(edge.lines.length, 0, "normal at the edge: no warning");
  assert.equal(await counter("deadline_missing_total", { procedure }), before + 2);
});
