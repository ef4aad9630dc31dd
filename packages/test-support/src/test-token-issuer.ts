import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, SignJWT, type JWK } from "jose";

/** The `iss` and `aud` of the tokens a TestTokenIssuer signs (JWT_ISSUER, JWT_AUDIENCE). */
export const testIssuer = "https://issuer.test";
export const testAudience = "platform-api";

export interface TestSigningKey {
  kid: string;
  privateKey: Awaited<ReturnType<typeof generateKeyPair>>["privateKey"];
  jwk: JWK;
}

export interface TokenOptions {
  kid?: string;
  sub?: string;
  iss?: string;
  aud?: string;
  /** jose's expiration: seconds since the epoch, or a span such as "5m" (default). */
  exp?: string | number;
  /** Extra claims (tenant, roles); `undefined` leaves one out. */
  claims?: Record<string, unknown>;
}

/**
 * An identity provider for tests: ES256 keys made at start, their public
 * halves served as a JWKS over HTTP on loopback (`jwksUrl`), and access
 * tokens signed with them. Keys can be added (rotation) and the endpoint
 * taken down (`down`); `requests` counts the key set's fetches.
 */
export class TestTokenIssuer {
  readonly issuer = testIssuer;
  readonly audience = testAudience;
  /** The keys the endpoint serves. */
  published: TestSigningKey[] = [];
  requests = 0;
  down = false;
  jwksUrl = "";
  private readonly server = http.createServer((_req, res) => {
    this.requests++;
    if (this.down) {
      res.writeHead(503).end();
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: this.published.map((k) => k.jwk) }));
  });

  static async start(): Promise<TestTokenIssuer> {
    const issuer = new TestTokenIssuer();
    await new Promise<void>((resolve) => issuer.server.listen(0, "127.0.0.1", resolve));
    issuer.jwksUrl = `http://127.0.0.1:${(issuer.server.address() as AddressInfo).port}/.well-known/jwks.json`;
    return issuer;
  }

  /** A new key pair (not published until added to `published`). */
  async key(kid: string): Promise<TestSigningKey> {
    const { privateKey, publicKey } = await generateKeyPair("ES256");
    return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: "ES256", use: "sig" } };
  }

  /** An access token signed with `key`: sub "user-1", tenant "acme", roles ["buyer"] unless told otherwise. */
  sign(key: TestSigningKey, opts: TokenOptions = {}): Promise<string> {
    return new SignJWT({ tenant: "acme", roles: ["buyer"], ...opts.claims })
      .setProtectedHeader({ alg: "ES256", kid: opts.kid ?? key.kid })
      .setIssuer(opts.iss ?? this.issuer)
      .setAudience(opts.aud ?? this.audience)
      .setSubject(opts.sub ?? "user-1")
      .setIssuedAt()
      .setExpirationTime(opts.exp ?? "5m")
      .sign(key.privateKey);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
