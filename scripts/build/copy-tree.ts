import { copyFileSync, linkSync, lstatSync, mkdirSync, readdirSync, readlinkSync, symlinkSync } from "node:fs";
import { join } from "node:path";

/**
 * Copies a folder, symlinks as they are (npm's workspace links are
 * relative, so they point into the copy), files as hard links where the
 * file system allows (node_modules is half a gigabyte on a development
 * machine; the copy is pruned right after, which only unlinks).
 */
export function copyTree(from: string, to: string): void {
  const stat = lstatSync(from);
  if (stat.isSymbolicLink()) {
    symlinkSync(readlinkSync(from), to);
  } else if (stat.isDirectory()) {
    mkdirSync(to, { recursive: true, mode: stat.mode & 0o777 });
    for (const name of readdirSync(from)) copyTree(join(from, name), join(to, name));
  } else if (stat.isFile()) {
    try {
      linkSync(from, to);
    } catch {
      copyFileSync(from, to);
    }
  }
}
