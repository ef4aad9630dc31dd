/**
 * For a service's own end-to-end test (the examples', and what `npm run
 * new-service` copies from them): the platform as `npm start` runs it, plus
 * this one service started from its manifest (services/<name>/service.json),
 * so the test needs no port, schema or flag of its own.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import type { RunningService } from "@platform/launcher";
import { startTestPlatform, type TestPlatform } from "./platform.js";

/** The keys of services/<name>/service.json a test reads. */
export interface ServiceManifest {
  name: string;
  ports: { rpc: number; admin: number };
  apis: string[];
  public: boolean;
  database?: { schema: string; role: string };
}

export function readServiceManifest(name: string): ServiceManifest {
  return JSON.parse(readFileSync(new URL(`../../../services/${name}/service.json`, import.meta.url), "utf8")) as ServiceManifest;
}

export interface ServiceUnderTest {
  manifest: ServiceManifest;
  platform: TestPlatform;
  /** The service's process: its url (gRPC, Connect) and adminUrl (/metrics). */
  service: RunningService;
}

export async function startServiceUnderTest(name: string): Promise<ServiceUnderTest> {
  const manifest = readServiceManifest(name);
  // The examples are started only when asked for; a copy (npm run new-service) is deployed and starts anyway.
  const platform = await startTestPlatform({ undeployed: [name] });
  const service = (platform.services as Record<string, RunningService | undefined>)[name];
  assert.ok(service, `${name} was started`);
  return { manifest, platform, service };
}
