import type { RetryPolicy } from "@platform/resilience";
import { sendJson, type HttpEndpoint } from "../server/http-endpoints.js";
import { installedPluginEffects, type PluginEffects } from "./plugin.js";

/**
 * What this process runs with, for `GET /admin/config` on the operator port
 * (read by `npm run audit -- --live`, docs/audit.md): the configuration its
 * loader produced (a service reads it once, at start, through `readEnv`),
 * and every dependency client it actually created, with the retry policy it
 * was wired with. Secrets never leave: see `redactConfig`.
 */
export interface EffectiveConfig {
  service: string;
  /** The last configuration `readEnv` produced in this process, redacted. */
  config: unknown;
  /** One per `createDependencyClient` call: what the audit cannot learn from configuration alone. */
  dependencyClients: WiredDependencyClient[];
  /** The plug-ins installed in the process (PLATFORM_PLUGINS), with what each changes. */
  plugins: { name: string; effects: PluginEffects }[];
}

export interface WiredDependencyClient {
  dependency: string;
  baseUrl: string;
  /** The plug-ins that composed it (plugin.ts); empty as the platform ships. */
  plugins: string[];
  /** "none", or the policy and budget the client retries with. */
  retry: "none" | { policy: RetryPolicy; budget: { percentCanRetry: number; minRetriesPerSec: number; ttlMs: number } };
}

let loadedConfig: unknown;
const wiredClients: WiredDependencyClient[] = [];

/** Called by `readEnv`: the configuration a service loaded. */
export function rememberLoadedConfig(value: unknown): void {
  loadedConfig = value;
}

/** Called by `createDependencyClient` for each client it makes. */
export function rememberDependencyClient(client: WiredDependencyClient): void {
  wiredClients.push({ ...client, baseUrl: redactUrl(client.baseUrl) });
}

export function effectiveConfig(service: string): EffectiveConfig {
  return {
    service,
    config: redactConfig(loadedConfig),
    dependencyClients: wiredClients.map((c) => redactConfig(c) as WiredDependencyClient),
    plugins: installedPluginEffects(service),
  };
}

export function configEndpoint(service: string): Record<string, HttpEndpoint> {
  return { "GET /admin/config": (_req, res) => sendJson(res, 200, effectiveConfig(service)) };
}

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
function redactUrl(text: string): string {
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
