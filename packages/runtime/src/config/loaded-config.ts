import type { RetryPolicy } from "@platform/resilience";
import { redactUrl } from "./redact.js";

/**
 * What this process loaded and wired, recorded as it starts and read by
 * `effectiveConfig` (effective-config.ts). A module of its own, importing
 * only redact.ts, so that `readEnv` and `createDependencyClient`
 * record into it without importing what effective-config.ts imports (the
 * plug-ins, and through them the server and client composition).
 */

export interface WiredDependencyClient {
  dependency: string;
  baseUrl: string;
  /** The plug-ins that composed it (plugin.ts); empty as the platform ships. */
  plugins: string[];
  /** "none", or the policy and budget the client retries with. */
  retry: "none" | { policy: RetryPolicy; budget: { percentCanRetry: number; minRetriesPerSec: number; ttlMs: number } };
}

let lastLoaded: unknown;
const wiredClients: WiredDependencyClient[] = [];

/** Called by `readEnv` (config.ts): the configuration a service loaded. */
export function rememberLoadedConfig(value: unknown): void {
  lastLoaded = value;
}

/** Called by `createDependencyClient` (client/dependency-client.ts) for each client it makes. */
export function rememberDependencyClient(client: WiredDependencyClient): void {
  wiredClients.push({ ...client, baseUrl: redactUrl(client.baseUrl) });
}

/** The last configuration `readEnv` produced in this process, unredacted. */
export function loadedConfig(): unknown {
  return lastLoaded;
}

/** Every dependency client made in this process, in order. */
export function wiredDependencyClients(): readonly WiredDependencyClient[] {
  return wiredClients;
}
