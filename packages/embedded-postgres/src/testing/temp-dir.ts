import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A temp directory for a test cluster. mkdtemp creates it 0700; when tests
 * run as root, postgres runs as another user that must traverse it, so it is
 * opened to 0755 (the data dir inside stays 0700).
 */
export function makeTempDir(prefix: string): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(path, 0o755);
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}
