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

/**
 * The platforms this process started for services under test, with how many
 * files still use each. Test files run in one process (`node --test
 * --test-isolation=none`, as test/new-service.test.ts runs the end-to-end
 * tests of the services it generated) share one platform when it runs their
 * service; the last close() stops it. Run the usual way, one process per
 * file, each file starts its own.
 */
const started: { platform: Promise<TestPlatform>; users: number }[] = [];

export async function startServiceUnderTest(name: string): Promise<ServiceUnderTest> {
  const manifest = readServiceManifest(name);
  let entry: (typeof started)[number] | undefined;
  for (const candidate of started) {
    const running = await candidate.platform.catch(() => undefined);
    if (running && name in running.services) entry = candidate;
  }
  if (entry === undefined) {
    // The examples are started only when asked for; a copy (npm run new-service) is deployed and starts anyway.
    entry = { platform: startTestPlatform({ undeployed: [name] }), users: 0 };
    started.push(entry);
  }
  entry.users++;
  const shared = entry;
  const platform = await shared.platform;
  const service = (platform.services as Record<string, RunningService | undefined>)[name];
  assert.ok(service, `${name} was started`);
  const close = async () => {
    if (--shared.users > 0) return;
    started.splice(started.indexOf(shared), 1);
    await platform.close();
  };
  return { manifest, platform: { ...platform, close }, service };
}
