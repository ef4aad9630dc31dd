/**
 * One platform for the whole `npm test` run, shared by the end-to-end test
 * files that leave it as they found it: they call it, read, and place orders
 * under customer ids and idempotency keys of their own, and never change
 * configuration, faults, processes or data that others read. Starting a
 * platform costs a few seconds of both cores (PostgreSQL's initdb, four
 * Node processes); these files share one instead of starting one each.
 *
 * `npm test` starts the platform in the test runner's process
 * (shared-platform-server.ts), in the background while the first files
 * run, and answers where it is on a loopback URL handed to every test file
 * in TEST_SHARED_PLATFORM_URL. A file run on its own (no
 * such variable) starts a platform of the same configuration for itself.
 */
import type { RunningService, ServiceName } from "@platform/launcher";
import { connectTestClients, startTestPlatform, type TestClients } from "./platform.js";

/** The variable that tells a test file where to ask for the run's platform. */
export const sharedPlatformEnv = "TEST_SHARED_PLATFORM_URL";

/** The origin the shared gateway allows for browsers (CORS), for the tests of that. */
export const sharedAllowedOrigin = "https://app.example.com";

/** The shared platform's configuration: the defaults, and one allowed browser origin. */
export const sharedPlatformOptions = { serviceEnv: { gateway: { CORS_ALLOWED_ORIGINS: sharedAllowedOrigin } } };

/** Where the platform is: what crosses from the runner's process to the test files. */
export interface PlatformAddresses {
  gatewayUrl: string;
  databaseUrl: string;
  services: Record<ServiceName, Pick<RunningService, "name" | "port" | "adminPort" | "url" | "adminUrl" | "logFile">>;
}

/** What a test file gets: the addresses and clients; its close() stops the platform only if this file started it. */
export interface SharedPlatform extends PlatformAddresses, TestClients {}

export function addressesOf(p: PlatformAddresses): PlatformAddresses {
  const services = Object.fromEntries(
    Object.entries(p.services).map(([name, s]) => [
      name,
      { name: s.name, port: s.port, adminPort: s.adminPort, url: s.url, adminUrl: s.adminUrl, logFile: s.logFile },
    ]),
  ) as PlatformAddresses["services"];
  return { gatewayUrl: p.gatewayUrl, databaseUrl: p.databaseUrl, services };
}

/**
 * The run's shared platform (waiting until it serves), or, outside `npm
 * test`, a platform of the same configuration started for this file.
 */
export async function sharedPlatform(): Promise<SharedPlatform> {
  const url = process.env[sharedPlatformEnv];
  if (url === undefined) {
    return startTestPlatform(sharedPlatformOptions);
  }
  // The runner answers once the platform serves (a long request, no polling), or with why it could not start.
  const res = await fetch(url, { signal: AbortSignal.timeout(180_000) });
  const body = await res.text();
  if (!res.ok) throw new Error(`the run's shared platform did not start: ${body}`);
  return connectTestClients(JSON.parse(body) as PlatformAddresses, async () => {});
}
