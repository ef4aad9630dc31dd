import { execFile } from "node:child_process";
import { mkdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * Builds @platform/client (dist/: JavaScript + .d.ts) as `npm run
 * example:client` does. Test files run in parallel and several need the
 * build: one builds at a time (a lock directory), and `tsc -b` leaves an
 * up-to-date dist/ untouched, so nobody reads a half-written file.
 */
export async function buildClientPackage(): Promise<void> {
  const lock = join(tmpdir(), `client-build-${Buffer.from(process.cwd()).toString("hex").slice(-32)}.lock`);
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      // A lock older than two minutes belongs to a test process that died.
      const held = statSync(lock, { throwIfNoEntry: false });
      if (held && Date.now() - held.mtimeMs > 120_000) rmSync(lock, { recursive: true, force: true });
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  try {
    await run("npm", ["run", "build", "--workspace", "@platform/client"]);
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
