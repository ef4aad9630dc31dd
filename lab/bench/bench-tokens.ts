import { TestTokenIssuer } from "@platform/test-support";

export interface BenchTokens {
  /** The platform's environment: the gateway verifies JWTs against the issuer's JWKS and keeps a quota per tenant. */
  gatewayEnv: Record<string, string>;
  /** One access token, valid for the whole run, that every bench client sends to the platform's gateway. */
  token: string;
  close(): Promise<void>;
}

/**
 * What `npm run bench -- --jwt` measures with: an identity provider on
 * loopback (a JWKS endpoint, test-support's TestTokenIssuer) and one
 * token, as a client of a real deployment holds one token for many calls.
 * The tenant's quota is on, and too large to refuse a call: the bench
 * measures what checking it costs, not a refusal.
 */
export async function startBenchTokens(): Promise<BenchTokens> {
  const issuer = await TestTokenIssuer.start();
  const key = await issuer.key("bench");
  issuer.published = [key];
  return {
    gatewayEnv: {
      AUTH_MODE: "jwt",
      JWT_JWKS_URL: issuer.jwksUrl,
      JWT_ISSUER: issuer.issuer,
      JWT_AUDIENCE: issuer.audience,
      TENANT_QUOTA_PER_SEC: "1000000",
      TENANT_QUOTA_BURST: "1000000",
    },
    token: await issuer.sign(key, { sub: "bench", exp: "2h", claims: { tenant: "bench" } }),
    close: () => issuer.close(),
  };
}
