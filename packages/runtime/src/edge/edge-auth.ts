import { createHash, timingSafeEqual } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { withRefusal } from "@platform/proto/error-details";
import type { EnvReader } from "../config/config.js";
import { JwksUnavailableError } from "./jwks-cache.js";
import { createJwtVerifier, readJwtConfig, TokenRejected, type JwtConfig, type TokenIdentity } from "./jwt-auth.js";

export interface AuthConfig {
  /**
   * "none" (development default); "api-key": `Authorization: Bearer <key>`
   * or `x-api-key: <key>`; "jwt": `Authorization: Bearer <access token>`,
   * verified against the issuer's JWKS (jwt-auth.ts).
   */
  mode: "none" | "api-key" | "jwt";
  /** Caller id -> key, from AUTH_API_KEYS="id1=key1,id2=key2" (pass it as a secret). The caller id is its tenant too. */
  keys: Map<string, string>;
  /** AUTH_MODE=jwt only. */
  jwt?: JwtConfig;
  /**
   * Roles a caller needs, by procedure (`/pkg.Service/Method`) or whole
   * service (`/pkg.Service/*`), from the token's roles claim; any one of
   * the listed roles suffices. A method not listed needs none.
   */
  methodRoles?: Map<string, readonly string[]>;
}

export function readAuthConfig(r: EnvReader): AuthConfig {
  const mode = r.oneOf("AUTH_MODE", ["none", "api-key", "jwt"] as const, "none");
  const keys = new Map<string, string>();
  const raw = r.optionalString("AUTH_API_KEYS");
  if (raw !== undefined) {
    for (const entry of raw.split(",")) {
      const i = entry.indexOf("=");
      const id = entry.slice(0, i).trim();
      const key = entry.slice(i + 1).trim();
      if (i <= 0 || !/^[A-Za-z0-9._-]{1,64}$/.test(id) || key.length < 16) {
        r.problems.push("AUTH_API_KEYS must be id=key pairs separated by commas; ids are [A-Za-z0-9._-], keys at least 16 characters");
        break;
      }
      keys.set(id, key);
    }
  }
  if (mode === "api-key" && keys.size === 0) r.problems.push("AUTH_MODE=api-key needs AUTH_API_KEYS");
  const methodRoles = readMethodRoles(r);
  if (methodRoles.size > 0 && mode !== "jwt") r.problems.push("AUTH_METHOD_ROLES needs AUTH_MODE=jwt: roles come from the token's roles claim");
  return { mode, keys, methodRoles, ...(mode === "jwt" ? { jwt: readJwtConfig(r) } : {}) };
}

/** AUTH_METHOD_ROLES="pkg.Service/Method=role1|role2,pkg.Service/*=admin". */
function readMethodRoles(r: EnvReader): Map<string, readonly string[]> {
  const roles = new Map<string, readonly string[]>();
  const raw = r.optionalString("AUTH_METHOD_ROLES");
  if (raw === undefined) return roles;
  for (const entry of raw.split(",")) {
    const m = /^\s*\/?([A-Za-z_][\w.]*\/(?:\*|[A-Za-z_]\w*))\s*=\s*([\w.:-]+(?:\|[\w.:-]+)*)\s*$/.exec(entry);
    if (!m) {
      r.problems.push(`AUTH_METHOD_ROLES: "${entry.trim()}" is not pkg.Service/Method=role1|role2 (or pkg.Service/*=role)`);
      continue;
    }
    roles.set(`/${m[1]!}`, m[2]!.split("|"));
  }
  return roles;
}

/** Who the edge established is calling: `caller` goes inward as x-caller-id, `tenant` as x-tenant-id. */
export interface Identity {
  caller: string;
  tenant: string;
}

export interface Authenticator {
  /**
   * The caller's identity from the request's headers alone (before any
   * body is read), or a refusal thrown as a ConnectError: unauthenticated
   * or permission_denied, in words a client can act on, with what exactly
   * failed as its `cause` (logged, never sent). Synchronous unless a token
   * has to be verified.
   */
  authenticate(headers: Headers, procedure: string): Identity | Promise<Identity>;
}

const anonymous: Identity = { caller: "anonymous", tenant: "anonymous" };

export function createAuthenticator(config: AuthConfig, opts: { onKeyLoadFailure?: (e: Error) => void } = {}): Authenticator {
  switch (config.mode) {
    case "none":
      return { authenticate: () => anonymous };
    case "api-key": {
      const digests = [...config.keys].map(([id, key]) => [id, hash(key)] as const);
      return {
        authenticate(headers) {
          const bearer = /^Bearer\s+(\S+)$/i.exec(headers.get("authorization") ?? "")?.[1];
          const presented = bearer ?? headers.get("x-api-key") ?? undefined;
          if (presented === undefined) throw unauthenticated("authentication required: send Authorization: Bearer <api key>", "no credentials");
          const digest = hash(presented);
          for (const [id, key] of digests) if (timingSafeEqual(digest, key)) return { caller: id, tenant: id };
          throw unauthenticated("invalid API key", "no API key matches");
        },
      };
    }
    case "jwt": {
      const verifier = createJwtVerifier(config.jwt!, opts);
      verifier.keys.warm();
      const authorize = (identity: TokenIdentity, procedure: string): Identity => {
        const needed = config.methodRoles?.get(procedure) ?? config.methodRoles?.get(serviceWildcard(procedure));
        if (needed && !needed.some((role) => identity.roles.has(role))) {
          throw withRefusal(
            new ConnectError(
              "permission denied",
              Code.PermissionDenied,
              undefined,
              undefined,
              new Error(`${identity.caller} lacks a role of ${needed.join("|")} for ${procedure}`),
            ),
            { reason: "PERMISSION_DENIED" },
          );
        }
        return identity;
      };
      return {
        authenticate(headers, procedure) {
          const token = /^Bearer\s+(\S+)$/i.exec(headers.get("authorization") ?? "")?.[1];
          if (token === undefined) throw unauthenticated("authentication required: send Authorization: Bearer <access token>", "no bearer token");
          // A token seen before is answered at once: no promise, no turn of the event loop.
          const known = verifier.known(token);
          if (known) return authorize(known, procedure);
          return verifier.verify(token).then(
            (identity) => authorize(identity, procedure),
            (e: unknown) => {
              if (e instanceof JwksUnavailableError)
                throw withRefusal(new ConnectError("authentication is unavailable; try again later", Code.Unavailable, undefined, undefined, e), {
                  reason: "AUTH_UNAVAILABLE",
                });
              if (e instanceof TokenRejected) throw unauthenticated("invalid or expired access token", e.message);
              throw e;
            },
          );
        },
      };
    }
  }
}

/** The answer says what the client can act on; `detail`, which check failed, goes to the log only (the error's cause). */
function unauthenticated(message: string, detail: string): ConnectError {
  return withRefusal(new ConnectError(message, Code.Unauthenticated, undefined, undefined, new Error(detail)), { reason: "UNAUTHENTICATED" });
}

/** `/pkg.Service/Method` -> `/pkg.Service/*`. */
function serviceWildcard(procedure: string): string {
  return `${procedure.slice(0, procedure.lastIndexOf("/"))}/*`;
}

function hash(s: string): Buffer {
  return createHash("sha256").update(s).digest();
}
