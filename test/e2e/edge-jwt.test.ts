/**
 * The edge with AUTH_MODE=jwt, as real processes: access tokens signed by a
 * key the test serves from a local JWKS endpoint; the identity (sub and
 * tenant) reaching every hop's log, never taken from a client's header;
 * refusals the same for every failed check, specific in the log; key
 * rotation and a key server that goes down; roles per method; one tenant
 * over its quota while another is served.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import {
  eventually,
  logLines,
  metricValue,
  startTestPlatform,
  TestTokenIssuer,
  type TestPlatform,
  type TestSigningKey,
  type TokenOptions,
} from "@platform/test-support";

let p: TestPlatform;
let idp: TestTokenIssuer;
let k1: TestSigningKey;
before(async () => {
  idp = await TestTokenIssuer.start();
  k1 = await idp.key("k1");
  idp.published = [k1];
  p = await startTestPlatform({
    serviceEnv: {
      gateway: {
        AUTH_MODE: "jwt",
        JWT_JWKS_URL: idp.jwksUrl,
        JWT_ISSUER: idp.issuer,
        JWT_AUDIENCE: idp.audience,
        // Reloads as often as asked: the rotation test is not made to wait out the interval.
        JWT_JWKS_MIN_REFRESH_MS: "0",
        JWT_JWKS_MAX_AGE_MS: "1000",
        AUTH_METHOD_ROLES: "checkout.v1.CheckoutService/PlaceOrder=buyer|admin",
        TENANT_QUOTA_PER_SEC: "1000",
        TENANT_QUOTA_OVERRIDES: "noisy=0.5:3",
      },
    },
  });
});
after(async () => {
  await p?.close();
  await idp?.close();
});

const list = (token: string | undefined, headers: Record<string, string> = {}) =>
  fetch(`${p.gatewayUrl}/checkout.v1.CheckoutService/ListProducts`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
    body: "{}",
  });

const sign = (opts: TokenOptions = {}) => idp.sign(k1, opts);

/** The gateway's refusal line for a request id. */
async function refusalLine(requestId: string): Promise<Record<string, unknown>> {
  let line: Record<string, unknown> | undefined;
  await eventually(() => {
    line = logLines(p, "gateway").find((l) => l["requestId"] === requestId && l["msg"] === "rpc refused before the handler");
    return line !== undefined;
  }, `gateway logged the refusal of ${requestId}`);
  return line!;
}

describe("JWT at the edge, over the chain", () => {
  test("a valid token is served; every hop logs its sub and tenant, not the ones a client claimed", async () => {
    const requestId = `jwt-${randomUUID()}`;
    const res = await list(await sign({ sub: "alice", claims: { tenant: "acme" } }), {
      "x-caller-id": "mallory",
      "x-tenant-id": "evil-corp",
      "x-request-id": requestId,
    });
    assert.equal(res.status, 200);
    for (const s of ["gateway", "checkout", "pricing"] as const) {
      await eventually(() => logLines(p, s).some((l) => l["requestId"] === requestId && l["msg"] === "rpc"), `${s} logged the request`);
      const line = logLines(p, s).find((l) => l["requestId"] === requestId && l["msg"] === "rpc");
      assert.equal(line?.["caller"], "alice", `${s}: caller`);
      assert.equal(line?.["tenant"], "acme", `${s}: tenant`);
    }
  });

  test("expired, wrong audience, wrong issuer, unsigned: 401 in the same words; the log names the check", async () => {
    const now = Math.floor(Date.now() / 1000);
    const cases: [string, RegExp][] = [
      [await sign({ exp: now - 120 }), /expired/],
      [await sign({ aud: "another-api" }), /aud/],
      [await sign({ iss: "https://evil.test" }), /iss/],
      [`${(await sign()).split(".").slice(0, 2).join(".")}.`, /signature|JWS/i],
    ];
    for (const [token, detail] of cases) {
      const requestId = `bad-${randomUUID()}`;
      const res = await list(token, { "x-request-id": requestId });
      assert.equal(res.status, 401);
      const body = (await res.json()) as { code: string; message: string; details?: { type: string; debug?: unknown }[] };
      // The same words and the same reason for every check: what failed is the log's to say.
      assert.deepEqual(
        { code: body.code, message: body.message, details: body.details?.map((d) => [d.type, d.debug]) },
        {
          code: "unauthenticated",
          message: "invalid or expired access token",
          details: [["google.rpc.ErrorInfo", { reason: "UNAUTHENTICATED", domain: "resilient-platform" }]],
        },
      );
      assert.match(String((await refusalLine(requestId))["detail"]), detail);
    }
    assert.equal((await list(undefined)).status, 401);
  });

  test("a rotated key: a token with the new kid is accepted once the key set is reloaded", async () => {
    const k2 = await idp.key("k2");
    idp.published = [k1, k2];
    const res = await list(await idp.sign(k2, { sub: "rotated" }));
    assert.equal(res.status, 200);
  });

  test("the key server down: tokens signed with a cached key still pass", async () => {
    assert.equal((await list(await sign())).status, 200);
    idp.down = true;
    try {
      const before = idp.requests;
      await new Promise((r) => setTimeout(r, 1100)); // past JWT_JWKS_MAX_AGE_MS: the gateway tries, and fails, to reload
      for (let i = 0; i < 3; i++) assert.equal((await list(await sign({ sub: `while-down-${i}` }))).status, 200);
      await eventually(() => idp.requests > before, "the gateway tried to reload the key set");
    } finally {
      idp.down = false;
    }
  });

  test("roles per method: PlaceOrder needs buyer or admin (403 without); ListProducts needs none", async () => {
    const viewer = await sign({ sub: "viewer", claims: { roles: ["viewer"] } });
    const res = await fetch(`${p.gatewayUrl}/checkout.v1.CheckoutService/PlaceOrder`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${viewer}` },
      body: JSON.stringify({ customerId: "c-viewer", items: [{ sku: "MUG-CERAMIC", quantity: 1 }] }),
    });
    assert.equal(res.status, 403);
    const denied = (await res.json()) as { code: string; message: string; details?: { type: string; debug?: unknown }[] };
    assert.deepEqual(
      { code: denied.code, message: denied.message, details: denied.details?.map((d) => [d.type, d.debug]) },
      {
        code: "permission_denied",
        message: "permission denied",
        details: [["google.rpc.ErrorInfo", { reason: "PERMISSION_DENIED", domain: "resilient-platform" }]],
      },
    );
    assert.equal((await list(viewer)).status, 200);
  });

  test("a tenant over its quota gets 429 naming its quota, with Retry-After; another tenant is served meanwhile", async () => {
    const noisy = await sign({ sub: "n1", claims: { tenant: "noisy" } });
    const calm = await sign({ sub: "c1", claims: { tenant: "calm" } });
    const noisyAnswers = await Promise.all(Array.from({ length: 8 }, () => list(noisy)));
    const statuses = noisyAnswers.map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 200).length, 3, `the burst of 3 passes: ${statuses.join(",")}`);
    const limited = noisyAnswers.filter((r) => r.status === 429);
    assert.equal(limited.length, 5);
    assert.ok(Number(limited[0]!.headers.get("retry-after")) >= 1);
    const body = (await limited[0]!.json()) as { code: string; message: string };
    assert.equal(body.code, "resource_exhausted");
    assert.match(body.message, /quota exceeded for tenant "noisy": 0.5 requests per second \(burst 3\)/);
    const calmAnswers = await Promise.all(Array.from({ length: 5 }, () => list(calm)));
    assert.deepEqual(
      calmAnswers.map((r) => r.status),
      [200, 200, 200, 200, 200],
    );
    const metrics = await (await fetch(`${p.services.gateway.adminUrl}/metrics`)).text();
    assert.equal(metricValue(metrics, "edge_tenant_requests_total", { tenant: "noisy", outcome: "over_quota" }), 5);
    assert.ok(metricValue(metrics, "edge_tenant_requests_total", { tenant: "noisy", outcome: "admitted" }) >= 3);
  });
});
