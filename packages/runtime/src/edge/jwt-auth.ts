import { errors, jwtVerify, type JWTPayload } from "jose";
import type { EnvReader } from "../config/config.js";
import { JwksCache, JwksUnavailableError, type JwksSource } from "./jwks-cache.js";

export interface JwtConfig {
  jwks: JwksSource;
  issuer: string;
  audience: string;
  /** The claim naming the caller's tenant (quotas are per tenant); a token without it is its own tenant, its `sub`. */
  tenantClaim: string;
  /** The claim listing the caller's roles: an array of strings, or one space-separated string (OAuth2 `scope`). */
  rolesClaim: string;
  /** Signature algorithms accepted; never "none" or a shared-secret one (the keys are public). */
  algorithms: string[];
  /** Tolerated clock difference with the issuer, on `exp` and `nbf`. */
  clockSkewSec: number;
  minRefreshIntervalMs: number;
  maxAgeMs: number;
  fetchTimeoutMs: number;
}

const asymmetric = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519"];

/** JWT_* settings; called when AUTH_MODE=jwt. */
export function readJwtConfig(r: EnvReader): JwtConfig {
  const url = r.optionalString("JWT_JWKS_URL");
  // Read as a path: the reader's own <VAR>_FILE convention would read the file's content instead.
  const file = r.optionalString("JWT_JWKS_FILE");
  if ((url === undefined) === (file === undefined)) r.problems.push("AUTH_MODE=jwt needs exactly one of JWT_JWKS_URL and JWT_JWKS_FILE");
  if (url !== undefined && !/^https?:\/\//.test(url)) r.problems.push(`JWT_JWKS_URL must be an http(s) URL, got "${url}"`);
  const algorithms = r
    .string("JWT_ALGORITHMS", "RS256,ES256")
    .split(",")
    .map((a) => a.trim());
  const unknown = algorithms.filter((a) => !asymmetric.includes(a));
  if (unknown.length > 0) r.problems.push(`JWT_ALGORITHMS: ${unknown.join(", ")} not accepted; choose from ${asymmetric.join(", ")}`);
  return {
    jwks: file !== undefined ? { file } : { url: url ?? "" },
    issuer: r.string("JWT_ISSUER"),
    audience: r.string("JWT_AUDIENCE"),
    tenantClaim: r.string("JWT_TENANT_CLAIM", "tenant"),
    rolesClaim: r.string("JWT_ROLES_CLAIM", "roles"),
    algorithms,
    clockSkewSec: r.int("JWT_CLOCK_SKEW_SEC", 30, { min: 0, max: 300 }),
    minRefreshIntervalMs: r.int("JWT_JWKS_MIN_REFRESH_MS", 30_000, { min: 0, max: 3_600_000 }),
    maxAgeMs: r.int("JWT_JWKS_MAX_AGE_MS", 600_000, { min: 1000, max: 86_400_000 }),
    fetchTimeoutMs: r.int("JWT_JWKS_TIMEOUT_MS", 2000, { min: 100, max: 60_000 }),
  };
}

/** Who a verified token says is calling. */
export interface TokenIdentity {
  caller: string;
  tenant: string;
  roles: ReadonlySet<string>;
}

/** Why a token was refused, for the log only: the caller is told no more than "invalid token". */
export class TokenRejected extends Error {
  override name = "TokenRejected";
}

/** Identities go into headers and log lines: short and printable only. */
const printable = /^[A-Za-z0-9._:@|-]{1,128}$/;

export interface JwtVerifier {
  /** The identity of a token verified before and not expired since; undefined otherwise (verify it). */
  known(token: string): TokenIdentity | undefined;
  verify(token: string): Promise<TokenIdentity>;
}

/**
 * Verifies bearer tokens against the issuer's JWKS (jwks-cache.ts):
 * signature, `exp` and `nbf` with `clockSkewSec` of tolerance, `iss`, `aud`.
 * A token verified once is remembered until it expires (up to `maxCached`
 * tokens), so a client sending the same token on every request pays for one
 * signature check: the cache holds exactly the bytes that were verified,
 * and expiry is checked on every hit.
 */
export function createJwtVerifier(
  config: JwtConfig,
  opts: { now?: () => number; maxCached?: number; onKeyLoadFailure?: (e: Error) => void } = {},
): JwtVerifier & { keys: JwksCache } {
  const wallNow = opts.now ?? Date.now;
  const maxCached = opts.maxCached ?? 10_000;
  const keys = new JwksCache(config.jwks, {
    minRefreshIntervalMs: config.minRefreshIntervalMs,
    maxAgeMs: config.maxAgeMs,
    fetchTimeoutMs: config.fetchTimeoutMs,
    ...(opts.onKeyLoadFailure ? { onLoadFailure: opts.onKeyLoadFailure } : {}),
  });
  const verified = new Map<string, { identity: TokenIdentity; expiresAt: number }>();
  const known = (token: string) => {
    const hit = verified.get(token);
    if (hit === undefined) return undefined;
    if (wallNow() < hit.expiresAt) return hit.identity;
    verified.delete(token);
    return undefined;
  };
  return {
    keys,
    known,
    async verify(token) {
      const hit = known(token);
      if (hit) return hit;
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, keys.getKey, {
          issuer: config.issuer,
          audience: config.audience,
          algorithms: config.algorithms,
          clockTolerance: config.clockSkewSec,
          requiredClaims: ["exp", "sub"],
          currentDate: new Date(wallNow()),
        }));
      } catch (e) {
        if (e instanceof JwksUnavailableError) throw e;
        throw new TokenRejected(rejection(e));
      }
      const identity = identityOf(payload, config);
      if (verified.size >= maxCached) verified.delete(verified.keys().next().value!);
      verified.set(token, { identity, expiresAt: (payload.exp! + config.clockSkewSec) * 1000 });
      return identity;
    },
  };
}

function identityOf(payload: JWTPayload, config: JwtConfig): TokenIdentity {
  const caller = payload.sub!;
  const tenantClaim = payload[config.tenantClaim];
  if (tenantClaim !== undefined && typeof tenantClaim !== "string") throw new TokenRejected(`claim "${config.tenantClaim}" is not a string`);
  const tenant = tenantClaim ?? caller;
  for (const [what, value] of [
    ["sub", caller],
    [config.tenantClaim, tenant],
  ] as const) {
    if (!printable.test(value)) throw new TokenRejected(`claim "${what}" must match ${printable.source}`);
  }
  return { caller, tenant, roles: rolesOf(payload[config.rolesClaim]) };
}

function rolesOf(claim: unknown): ReadonlySet<string> {
  if (typeof claim === "string") return new Set(claim.split(" ").filter((r) => r !== ""));
  if (Array.isArray(claim)) return new Set(claim.filter((r): r is string => typeof r === "string"));
  return new Set();
}

/** What failed, in words for the log (jose's own, with its code). */
function rejection(e: unknown): string {
  if (e instanceof errors.JWTExpired) return `token expired (exp ${String(e.payload.exp)})`;
  if (e instanceof errors.JWTClaimValidationFailed) return `claim "${e.claim}" rejected: ${e.message}`;
  if (e instanceof errors.JOSEError) return `${e.code}: ${e.message}`;
  return e instanceof Error ? e.message : String(e);
}
