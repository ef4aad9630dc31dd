/**
 * The edge's security (issue: hardening): optional API-key authentication,
 * the caller's identity propagated inward and never taken from outside,
 * per-client rate limits. Real processes.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { healthV1 } from "@platform/proto";
import { eventually, logLines, startTestPlatform, transportFor, type TestPlatform } from "@platform/test-support";

const aliceKey = randomUUID();
const bobKey = randomUUID();
let p: TestPlatform;
before(async () => {
  p = await startTestPlatform({
    env: { LOG_LEVEL: "info" },
    serviceEnv: {
      gateway: {
        AUTH_MODE: "api-key",
        AUTH_API_KEYS: `alice=${aliceKey},bob=${bobKey}`,
        RATE_LIMIT_PER_SEC: "5",
        RATE_LIMIT_BURST: "5",
        CORS_ALLOWED_ORIGINS: "https://app.example.com",
      },
    },
  });
});
after(async () => {
  await p?.close();
});

const list = (headers: Record<string, string>) =>
  fetch(`${p.gatewayUrl}/checkout.v1.CheckoutService/ListProducts`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: "{}",
  });

describe("authentication at the gateway", () => {
  test("no key or a wrong key: 401 unauthenticated, nothing reaches the inside", async () => {
    const attempts: Record<string, string>[] = [{}, { authorization: "Bearer nope" }, { "x-api-key": "nope" }, { authorization: `Basic ${aliceKey}` }];
    for (const headers of attempts) {
      const res = await list(headers);
      assert.equal(res.status, 401);
      assert.equal(((await res.json()) as { code: string }).code, "unauthenticated");
    }
    await assert.rejects(p.client("grpc").listProducts({}), (e: { code: number }) => e.code === 16);
  });

  test("a valid key passes, and inner services see who called, not who claimed to", async () => {
    const requestId = `auth-${randomUUID()}`;
    const res = await list({ authorization: `Bearer ${aliceKey}`, "x-caller-id": "mallory", "x-request-id": requestId });
    assert.equal(res.status, 200);
    // Each service writes its line when its own answer is done: wait for all three.
    for (const s of ["gateway", "checkout", "pricing"] as const) {
      await eventually(() => logLines(p, s).some((l) => l["requestId"] === requestId && l["msg"] === "rpc"), `${s} logged the request`);
    }
    for (const s of ["gateway", "checkout", "pricing"] as const) {
      const line = logLines(p, s).find((l) => l["requestId"] === requestId && l["msg"] === "rpc");
      assert.equal(line?.["caller"], "alice", `${s} saw the authenticated caller`);
    }
  });

  test("health checks need no credentials (Kubernetes probes)", async () => {
    const health = createClient(healthV1.Health, transportFor(p.gatewayUrl, "grpc"));
    const res = await health.check({ service: "" });
    assert.equal(res.status, healthV1.HealthCheckResponse_ServingStatus.SERVING);
  });
});

describe("per-client rate limits", () => {
  test("a client over its rate gets 429 with Retry-After; another client is unaffected", async () => {
    const statuses = await Promise.all(
      Array.from({ length: 15 }, () => list({ "x-api-key": bobKey }).then((r) => [r.status, r.headers.get("retry-after")] as const)),
    );
    const limited = statuses.filter(([s]) => s === 429);
    assert.ok(limited.length >= 5, `bob limited ${limited.length} times`);
    assert.ok(statuses.filter(([s]) => s === 200).length <= 6, "about the burst got through");
    for (const [, retryAfter] of limited) assert.ok(Number(retryAfter) >= 1);
    assert.equal((await list({ "x-api-key": aliceKey })).status, 200, "alice still served");
  });
});

describe("browsers (CORS)", () => {
  const preflight = (origin: string) =>
    fetch(`${p.gatewayUrl}/checkout.v1.CheckoutService/PlaceOrder`, {
      method: "OPTIONS",
      headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "content-type,idempotency-key,authorization" },
    });

  test("an allowed origin's preflight is answered, without credentials, allowing our headers", async () => {
    const res = await preflight("https://app.example.com");
    assert.equal(res.status, 204);
    assert.equal(res.headers.get("access-control-allow-origin"), "https://app.example.com");
    assert.match(res.headers.get("access-control-allow-headers") ?? "", /Idempotency-Key/i);
    assert.match(res.headers.get("access-control-allow-headers") ?? "", /Authorization/i);
  });

  test("responses to an allowed origin expose the request id, the pushback hint and which service failed", async () => {
    const res = await list({ origin: "https://app.example.com", "x-api-key": aliceKey });
    assert.equal(res.headers.get("access-control-allow-origin"), "https://app.example.com");
    assert.match(res.headers.get("access-control-expose-headers") ?? "", /Retry-After/i);
    assert.match(res.headers.get("access-control-expose-headers") ?? "", /X-Failed-Dependency/i);
  });

  test("another origin gets no CORS headers", async () => {
    const res = await preflight("https://evil.example.net");
    assert.equal(res.headers.get("access-control-allow-origin"), null);
  });
});
