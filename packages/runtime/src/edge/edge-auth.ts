import { createHash, timingSafeEqual } from "node:crypto";
import type { EnvReader } from "../config/config.js";

export interface AuthConfig {
  /** "none" (development default) or "api-key": `Authorization: Bearer <key>` or `x-api-key: <key>`. */
  mode: "none" | "api-key";
  /** Caller id -> key, from AUTH_API_KEYS="id1=key1,id2=key2" (pass it as a secret). */
  keys: Map<string, string>;
}

export function readAuthConfig(r: EnvReader): AuthConfig {
  const mode = r.oneOf("AUTH_MODE", ["none", "api-key"] as const, "none");
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
  return { mode, keys };
}

export type AuthResult = { ok: true; caller: string } | { ok: false; message: string };

/**
 * Authenticates a request at the edge from its headers alone (before any
 * body is read). Keys are compared by hash in constant time. Whatever the
 * outcome, a caller-supplied identity header is never passed inward: the
 * edge overwrites it with the identity it established.
 */
export function authenticate(config: AuthConfig, headers: Headers): AuthResult {
  if (config.mode === "none") return { ok: true, caller: "anonymous" };
  const bearer = /^Bearer\s+(\S+)$/i.exec(headers.get("authorization") ?? "")?.[1];
  const presented = bearer ?? headers.get("x-api-key") ?? undefined;
  if (presented === undefined) return { ok: false, message: "authentication required: send Authorization: Bearer <api key>" };
  const digest = hash(presented);
  for (const [id, key] of config.keys) if (timingSafeEqual(digest, hash(key))) return { ok: true, caller: id };
  return { ok: false, message: "invalid API key" };
}

function hash(s: string): Buffer {
  return createHash("sha256").update(s).digest();
}
