/**
 * What leaves the process about its configuration (`GET /admin/config`, the
 * dependency clients it records) never holds a secret: see `redactConfig`.
 */

/** Keys whose values are secrets whatever they hold (AUTH_API_KEYS becomes `keys`). */
const secretKey = /pass(word)?|secret|token|credential|private|api.?keys?|^keys$/i;
export const redacted = "[redacted]";

/**
 * A JSON-safe copy of a configuration with every secret replaced: values
 * under secret-sounding keys, and the password of any URL (a DATABASE_URL
 * keeps its user, host and database, which the audit and an operator need).
 * Maps become objects, protobuf descriptors their type name, functions and
 * cycles are dropped.
 */
export function redactConfig(value: unknown, seen = new WeakSet<object>()): unknown {
  if (typeof value === "string") return redactUrl(value);
  if (typeof value !== "object" || value === null)
    return typeof value === "function" || typeof value === "symbol" ? undefined : typeof value === "bigint" ? String(value) : value;
  if (seen.has(value)) return undefined;
  seen.add(value);
  // A protobuf descriptor (a forwarded API's service) is named, not walked.
  if ("typeName" in value && "kind" in value && typeof value.typeName === "string") return value.typeName;
  if (Array.isArray(value)) return value.map((v) => redactConfig(v, seen));
  const entries = value instanceof Map ? [...value.entries()].map(([k, v]) => [String(k), v] as const) : Object.entries(value);
  const out: Record<string, unknown> = {};
  for (const [k, v] of entries) {
    const shown = secretKey.test(k) ? redacted : redactConfig(v, seen);
    if (shown !== undefined) out[k] = shown;
  }
  return out;
}

/** A URL with its password replaced; anything else unchanged. */
export function redactUrl(text: string): string {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return text;
  try {
    const u = new URL(text);
    if (u.password === "") return text;
    u.password = "redacted";
    return u.toString();
  } catch {
    // Not parseable, but it looked like a URL: it may still hold user:password@.
    return text.replace(/\/\/[^/@\s]*@/, `//${redacted}@`);
  }
}
