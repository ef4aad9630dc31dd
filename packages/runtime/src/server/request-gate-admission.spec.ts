// npm test: own process (it reads prom-client's global registry by metric name: in a shared process another spec's gate registered it first and the wait for a queued request never ends)
/**
 * Admission control inside Connect's requestGate: a queued request is
 * neither read nor parsed until admitted, and its deadline runs while it
 * waits. A real serve() admitting one request at a time.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Counter } from "@platform/test-support";
import { readEnv } from "../config/config.js";
import { createLogger } from "../observability/logger.js";
import { register } from "../observability/metrics.js";
import { serve, type RunningServer } from "./serve.js";
import { readServerConfig } from "../config/server-config.js";
import { requestContext } from "./request-context.js";

let server: RunningServer;
let baseUrl: string;
/** Get holds its slot until the test releases it, and records the time each call had left when it started. */
let releaseHolder: () => void = () => {};
const remainingAtStart: number[] = [];

before(async () => {
  // The queue's tolerance is what the first test waits past, and what the second test's hold (250 ms,
  // measured) must stay under: at 400 ms a loaded machine's 250 ms sleep ran past it and the queued
  // call was shed instead of started.
  const env = { PORT: "0", ADMIN_PORT: "0", ADMISSION_MAX_CONCURRENT: "1", ADMISSION_MAX_QUEUE: "4", ADMISSION_MAX_QUEUE_WAIT_MS: "2000" };
  const config = readEnv(env, (r) => readServerConfig(r, "admission-test", { port: 0, adminPort: 0, edge: true }));
  server = await serve({
    config,
    logger: createLogger("admission-test", "silent"),
    services: [Counter],
    routes(router) {
      const impl = {
        async get(_req: unknown, ctx: Parameters<typeof requestContext>[0] & { requestHeader: Headers }) {
          // The deadline is the request context's (serve() hands Connect none: ctx.timeoutMs() is undefined).
          remainingAtStart.push(requestContext(ctx)?.remainingMs() ?? Number.NaN);
          if (ctx.requestHeader.get("x-hold") === "1") await new Promise<void>((resolve) => (releaseHolder = resolve));
          return {};
        },
        async *count() {},
      };
      router.service(Counter, impl as never);
    },
    http1: true,
  });
  await server.ready;
  baseUrl = `http://127.0.0.1:${server.port}`;
});
after(async () => {
  releaseHolder();
  await server?.shutdown("test over");
});

const get = (body: string, headers: Record<string, string> = {}) =>
  fetch(`${baseUrl}/test.v1.Counter/Get`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });

async function queued(): Promise<number> {
  const m = await register.getSingleMetric("admission_queued")!.get();
  return m.values.reduce((sum, v) => sum + v.value, 0);
}

async function untilQueued(n: number): Promise<void> {
  while ((await queued()) < n) await new Promise((r) => setTimeout(r, 10));
}

/** Until `n` handlers have started (the holder holds the only slot from then on). */
async function untilStarted(n: number): Promise<void> {
  while (remainingAtStart.length < n) await new Promise((r) => setTimeout(r, 10));
}

describe("admission control in the request gate", () => {
  test("a queued request's body is not parsed: a malformed one waiting past the queue's tolerance is shed (resource_exhausted), not refused as invalid", async () => {
    remainingAtStart.length = 0;
    const holder = get("{}", { "x-hold": "1" });
    await untilStarted(1);
    const malformed = await get("{ not json", { "connect-timeout-ms": "10000" });
    assert.equal(malformed.status, 429);
    const body = (await malformed.json()) as { code: string; message: string };
    assert.equal(body.code, "resource_exhausted", body.message);
    assert.ok(Number(malformed.headers.get("retry-after")) >= 1, "with a pushback hint");
    assert.ok(malformed.headers.get("x-request-id"), "and the request id");
    releaseHolder();
    assert.equal((await holder).status, 200);
    // Admitted, the same body is parsed and refused for what it is.
    assert.equal(((await (await get("{ not json")).json()) as { code: string }).code, "invalid_argument");
  });

  test("the deadline runs while a request waits in the queue: the handler starts with at most its deadline minus the wait", async () => {
    remainingAtStart.length = 0;
    const holder = get("{}", { "x-hold": "1" });
    await untilStarted(1);
    const waiting = get("{}", { "connect-timeout-ms": "5000" });
    await untilQueued(1);
    const heldFrom = performance.now();
    await new Promise((r) => setTimeout(r, 250));
    const heldMs = performance.now() - heldFrom;
    releaseHolder();
    assert.equal((await holder).status, 200);
    assert.equal((await waiting).status, 200);
    assert.equal(remainingAtStart.length, 2);
    const waitedStart = remainingAtStart[1]!;
    assert.ok(waitedStart <= 5000 - heldMs, `the queued call started with ${waitedStart} ms left, after waiting at least ${heldMs.toFixed(0)} ms of its 5000`);
  });
});
