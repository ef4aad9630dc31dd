/**
 * The run's shared platform (shared-platform.ts), served from the test
 * runner's own process (scripts/run-test-files.ts): globalSetup runs before
 * the first file starts, globalTeardown after the last one ends, as
 * node's --test-global-setup hooks would.
 *
 * The platform starts in the background: the files that do not need it
 * (most of them) run meanwhile. A small HTTP server on loopback answers
 * each file's request once the platform serves, with its addresses (or,
 * if it failed to start, with why), so a file waits for exactly that
 * event and nothing longer.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { startTestPlatform, type TestPlatform } from "./platform.js";
import { addressesOf, sharedPlatformEnv, sharedPlatformOptions } from "./shared-platform.js";

let platform: Promise<TestPlatform> | undefined;
let server: Server | undefined;

export async function globalSetup(): Promise<void> {
  const starting = startTestPlatform(sharedPlatformOptions);
  platform = starting;
  // A failed start is reported to every file that asks for the platform, as its failure.
  starting.catch(() => {});
  server = createServer((_req, res) => {
    starting.then(
      (p) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(addressesOf(p)));
      },
      (e: unknown) => {
        res.writeHead(500, { "content-type": "text/plain" });
        res.end(e instanceof Error ? (e.stack ?? e.message) : String(e));
      },
    );
  });
  const listening = server;
  await new Promise<void>((resolve) => listening.listen(0, "127.0.0.1", resolve));
  // Set before the runner starts any file: each file's process inherits the runner's environment.
  process.env[sharedPlatformEnv] = `http://127.0.0.1:${(listening.address() as AddressInfo).port}/`;
}

export async function globalTeardown(): Promise<void> {
  server?.closeAllConnections();
  server?.close();
  const started = await platform?.catch(() => undefined);
  await started?.close();
}
