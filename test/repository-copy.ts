/**
 * A copy of the repository in a temporary directory, as a fresh clone would
 * have it after `npm ci`: the tracked and untracked working-tree files
 * (ignored ones, such as tools/kubectl/bin, stay out), and a node_modules
 * of symlinks to ORIGIN's entries, except @platform/*, which point
 * (relatively, as npm links them) at the copy's own workspaces, so the copy
 * runs its own code.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

/** Copies ORIGIN into a new directory named PREFIX... under the temporary folder; returns its path. */
export function copyRepository(origin: string, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const listed = spawnSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: origin, encoding: "utf8" });
  assert.equal(listed.status, 0, listed.stderr);
  for (const file of new Set(listed.stdout.split("\0").filter(Boolean))) {
    if (!existsSync(join(origin, file))) continue; // deleted in the working tree
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    cpSync(join(origin, file), join(dir, file), { verbatimSymlinks: true });
  }
  const modules = join(origin, "node_modules");
  mkdirSync(join(dir, "node_modules"));
  for (const entry of readdirSync(modules)) {
    // npm's hidden lock file stays out: nothing run in the copy may write through to ours.
    if (entry === ".package-lock.json") continue;
    if (entry === "@platform") {
      mkdirSync(join(dir, "node_modules", entry));
      for (const link of readdirSync(join(modules, entry))) symlinkSync(readlinkSync(join(modules, entry, link)), join(dir, "node_modules", entry, link));
    } else symlinkSync(join(modules, entry), join(dir, "node_modules", entry));
  }
  return dir;
}
