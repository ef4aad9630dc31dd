/**
 * JWT authentication against a real JWKS endpoint (an HTTP server in this
 * process) with real signed tokens: each check, key rotation, a key server
 * that goes down, refreshes that a flood of unknown key ids cannot
 * multiply, roles per method.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Code, ConnectError } from "@connectrpc/connect";
import { refusalReason } from "@platform/proto/error-details";
import { testAudience as audience, testIssuer as issuer, TestTokenIssuer, type TestSigningKey, type TokenOptions } from "@platform/test-support";
import { EnvReader } from "../config/config.js";
import { createAuthenticator, readAuthConfig, type Authenticator } from "./edge-auth.js";
import type { JwtConfig } from "./jwt-auth.js";

let keyServer: TestTokenIssuer;

function token(key: TestSigningKey, claims: Record<string, unknown> = {}, opts: Omit<TokenOptions, "claims"> = {}) {
  return keyServer.sign(key, { ...opts, claims });
}

function config(url: string, overrides: Partial<JwtConfig> = {}): JwtConfig {
  return {
    jwks: { url },
    issuer,
    audience,
    tenantClaim: "tenant",
    rolesClaim: "roles",
    algorithms: ["ES256"],
    clockSkewSec: 5,
    minRefreshIntervalMs: 60_000,
    maxAgeMs: 600_000,
    fetchTimeoutMs: 1000,
    ...overrides,
  };
}

const placeOrder = "/checkout.v1.CheckoutService/PlaceOrder";
const listProducts = "/checkout.v1.CheckoutService/ListProducts";

function authenticator(jwt: JwtConfig, methodRoles = new Map<string, readonly string[]>()): Authenticator {
  return createAuthenticator({ mode: "jwt", keys: new Map(), jwt, methodRoles });
}

const bearer = (t: string) => new Headers({ authorization: `Bearer ${t}` });

/** The refusal's code, the message the client gets, and the detail only the log gets. */
async function refusal(attempt: () => unknown): Promise<{ code: Code; message: string; detail: string; reason: string | undefined }> {
  try {
    await attempt();
  } catch (e) {
    assert.ok(e instanceof ConnectError, String(e));
    return { code: e.code, message: e.rawMessage, detail: e.cause instanceof Error ? e.cause.message : "", reason: refusalReason(e) };
  }
  assert.fail("accepted");
}

let k1: TestSigningKey;
let k2: TestSigningKey;
before(async () => {
  keyServer = await TestTokenIssuer.start();
  [k1, k2] = await Promise.all([keyServer.key("k1"), keyServer.key("k2")]);
});
after(() => keyServer.close());

describe("JWT at the edge", () => {
  test("a valid token: the caller is its sub, the tenant its tenant claim", async () => {
    keyServer.published = [k1];
    const auth = authenticator(config(keyServer.jwksUrl));
    const who = async (t: string) => {
      const { caller, tenant } = await auth.authenticate(bearer(t), placeOrder);
      return { caller, tenant };
    };
    assert.deepEqual(await who(await token(k1)), { caller: "user-1", tenant: "acme" });
    // Verified once, a token is known until it expires: answered without a promise.
    const twice = await token(k1, {}, { sub: "twice" });
    const first = auth.authenticate(bearer(twice), placeOrder);
    assert.ok(first instanceof Promise);
    await first;
    const known = auth.authenticate(bearer(twice), placeOrder);
    assert.ok(!(known instanceof Promise) && known.caller === "twice");
    // Without a tenant claim, the caller is a tenant of its own.
    assert.deepEqual(await who(await token(k1, { tenant: undefined }, { sub: "solo" })), { caller: "solo", tenant: "solo" });
  });

  test("expired, wrong audience, wrong issuer, bad signature, no token: unauthenticated, the same words for every check; the log says which", async () => {
    keyServer.published = [k1];
    const auth = authenticator(config(keyServer.jwksUrl));
    const now = Math.floor(Date.now() / 1000);
    const forged = await token({ ...k1, privateKey: k2.privateKey });
    const cases = [
      [await token(k1, {}, { exp: now - 60 }), /exp/],
      [await token(k1, {}, { aud: "someone-else" }), /aud/],
      [await token(k1, {}, { iss: "https://evil.test" }), /iss/],
      [forged, /signature/],
      ["not.a.jwt", /JWS|JWT|Invalid/i],
    ] as const;
    for (const [t, detail] of cases) {
      const r = await refusal(async () => auth.authenticate(bearer(t), placeOrder));
      assert.equal(r.code, Code.Unauthenticated);
      assert.equal(r.message, "invalid or expired access token");
      assert.equal(r.reason, "UNAUTHENTICATED", "ErrorInfo says what a client can act on, not which check failed");
      assert.match(r.detail, detail);
    }
    const none = await refusal(async () => auth.authenticate(new Headers(), placeOrder));
    assert.equal(none.code, Code.Unauthenticated);
    assert.match(none.message, /Authorization: Bearer/);
  });

  test("expiry within the clock skew still passes; beyond it, refused", async () => {
    keyServer.published = [k1];
    const auth = authenticator(config(keyServer.jwksUrl, { clockSkewSec: 30 }));
    const now = Math.floor(Date.now() / 1000);
    assert.equal((await auth.authenticate(bearer(await token(k1, {}, { exp: now - 10 })), placeOrder)).caller, "user-1");
    assert.equal((await refusal(async () => auth.authenticate(bearer(await token(k1, {}, { exp: now - 40 })), placeOrder))).code, Code.Unauthenticated);
  });

  test("an unknown kid reloads the key set: the rotated key is accepted", async () => {
    keyServer.published = [k1];
    const auth = authenticator(config(keyServer.jwksUrl, { minRefreshIntervalMs: 0 }));
    await auth.authenticate(bearer(await token(k1)), placeOrder);
    keyServer.published = [k1, k2]; // the provider rotates
    assert.equal((await auth.authenticate(bearer(await token(k2, {}, { sub: "user-2" })), placeOrder)).caller, "user-2");
  });

  test("a flood of unknown kids costs the key server one load per interval, and is refused", async () => {
    keyServer.published = [k1];
    const auth = authenticator(config(keyServer.jwksUrl, { minRefreshIntervalMs: 60_000 }));
    await auth.authenticate(bearer(await token(k1)), placeOrder);
    const before = keyServer.requests;
    const stranger = await keyServer.key("k-unknown");
    const tokens = await Promise.all(Array.from({ length: 50 }, (_, i) => token(stranger, {}, { sub: `u${i}` })));
    const refusals = await Promise.all(tokens.map((t) => refusal(async () => auth.authenticate(bearer(t), placeOrder))));
    assert.ok(refusals.every((r) => r.code === Code.Unauthenticated));
    assert.ok(
      refusals.some((r) => /no applicable key|JWKS/i.test(r.detail)),
      refusals[0]!.detail,
    );
    // Started less than an interval after the first load: none at all.
    assert.equal(keyServer.requests - before, 0);
  });

  test("the key server down: cached keys keep working; a key it never served is refused", async () => {
    keyServer.published = [k1];
    const failures: string[] = [];
    const auth = createAuthenticator(
      { mode: "jwt", keys: new Map(), jwt: config(keyServer.jwksUrl, { minRefreshIntervalMs: 0, maxAgeMs: 1000 }) },
      { onKeyLoadFailure: (e) => failures.push(e.message) },
    );
    await auth.authenticate(bearer(await token(k1)), placeOrder);
    keyServer.down = true;
    try {
      await new Promise((r) => setTimeout(r, 1100)); // past maxAge: every use tries a reload, which fails
      for (let i = 0; i < 3; i++)
        assert.equal((await auth.authenticate(bearer(await token(k1, {}, { sub: `cached-${i}` })), placeOrder)).caller, `cached-${i}`);
      const r = await refusal(async () => auth.authenticate(bearer(await token(k2)), placeOrder));
      assert.equal(r.code, Code.Unauthenticated);
      assert.ok(
        failures.some((f) => /503/.test(f)),
        failures.join("; "),
      );
    } finally {
      keyServer.down = false;
    }
  });

  test("no key ever loaded (the key server down since start): unavailable, not the caller's fault", async () => {
    keyServer.down = true;
    try {
      const auth = authenticator(config(keyServer.jwksUrl, { minRefreshIntervalMs: 0 }));
      const r = await refusal(async () => auth.authenticate(bearer(await token(k1)), placeOrder));
      assert.equal(r.code, Code.Unavailable);
    } finally {
      keyServer.down = false;
    }
  });

  test("roles per method: a method listed needs one of its roles; other methods need none", async () => {
    keyServer.published = [k1];
    const roles = new Map<string, readonly string[]>([[placeOrder, ["buyer", "admin"]]]);
    const auth = authenticator(config(keyServer.jwksUrl), roles);
    assert.equal((await auth.authenticate(bearer(await token(k1, { roles: ["buyer"] })), placeOrder)).caller, "user-1");
    // An OAuth2 scope string works as the roles claim too.
    assert.equal((await auth.authenticate(bearer(await token(k1, { roles: "read admin" })), placeOrder)).caller, "user-1");
    const denied = await refusal(async () => auth.authenticate(bearer(await token(k1, { roles: ["viewer"] }, { sub: "viewer-1" })), placeOrder));
    assert.equal(denied.code, Code.PermissionDenied);
    assert.equal(denied.message, "permission denied");
    assert.equal(denied.reason, "PERMISSION_DENIED");
    assert.match(denied.detail, /viewer-1 lacks a role of buyer\|admin/);
    assert.equal((await auth.authenticate(bearer(await token(k1, { roles: [] })), listProducts)).caller, "user-1");
  });

  test("an identity that cannot travel in a header is refused", async () => {
    keyServer.published = [k1];
    const auth = authenticator(config(keyServer.jwksUrl));
    const r = await refusal(async () => auth.authenticate(bearer(await token(k1, { tenant: "acme\r\nx-caller-id: root" })), placeOrder));
    assert.equal(r.code, Code.Unauthenticated);
    assert.match(r.detail, /tenant/);
  });
});

describe("JWT configuration", () => {
  const read = (env: Record<string, string>) => {
    const r = new EnvReader(env);
    return { config: readAuthConfig(r), problems: r.problems };
  };

  test("AUTH_MODE=jwt: one key source, the issuer and the audience; roles per method parsed", () => {
    const { config, problems } = read({
      AUTH_MODE: "jwt",
      JWT_JWKS_URL: "https://login.example.com/jwks.json",
      JWT_ISSUER: issuer,
      JWT_AUDIENCE: audience,
      AUTH_METHOD_ROLES: "checkout.v1.CheckoutService/PlaceOrder=buyer|admin, orders.v1.OrdersService/*=admin",
    });
    assert.deepEqual(problems, []);
    assert.deepEqual(config.jwt?.jwks, { url: "https://login.example.com/jwks.json" });
    assert.deepEqual(
      [...config.methodRoles!],
      [
        ["/checkout.v1.CheckoutService/PlaceOrder", ["buyer", "admin"]],
        ["/orders.v1.OrdersService/*", ["admin"]],
      ],
    );
  });

  test("each mistake is named: no key source or two, no issuer, a shared-secret algorithm, a malformed role entry, roles without JWT", () => {
    assert.deepEqual(read({ AUTH_MODE: "jwt", JWT_AUDIENCE: audience, JWT_ALGORITHMS: "HS256" }).problems, [
      "AUTH_MODE=jwt needs exactly one of JWT_JWKS_URL and JWT_JWKS_FILE",
      "JWT_ALGORITHMS: HS256 not accepted; choose from RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA, Ed25519",
      "JWT_ISSUER is required",
    ]);
    assert.match(
      read({ AUTH_MODE: "jwt", JWT_JWKS_URL: "https://a/j", JWT_JWKS_FILE: "/k.json", JWT_ISSUER: issuer, JWT_AUDIENCE: audience }).problems.join(),
      /exactly one of JWT_JWKS_URL and JWT_JWKS_FILE/,
    );
    assert.match(
      read({ AUTH_MODE: "api-key", AUTH_API_KEYS: `a=${"k".repeat(16)}`, AUTH_METHOD_ROLES: "a.B/C=x" }).problems.join(),
      /AUTH_METHOD_ROLES needs AUTH_MODE=jwt/,
    );
    assert.match(read({ AUTH_METHOD_ROLES: "PlaceOrder=buyer" }).problems.join(), /"PlaceOrder=buyer" is not pkg.Service\/Method=role1\|role2/);
  });
});
