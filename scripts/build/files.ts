import { createHash } from "node:crypto";
import { renameSync, writeFileSync } from "node:fs";

/**
 * Writes `data` to a temporary name beside `path`, then renames it into
 * place: a reader (a service starting, another build) sees the old file or
 * the new one, never half of one. The temporary name ends in ".tmp", which
 * the compile step's clean-up leaves alone.
 */
export function writeAtomically(path: string, data: string | Uint8Array): void {
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, data);
  renameSync(temporary, path);
}

export function sha256(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}
