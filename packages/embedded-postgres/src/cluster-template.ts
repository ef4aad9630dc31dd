import { createHash } from "node:crypto";
import { chmodSync, copyFileSync, lchownSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { isInitialised, prepareDataDir } from "./data-dir.js";
import type { RunAsUser } from "./run-as-user.js";

/**
 * A fresh cluster, made once by initdb under `templates` and copied into
 * each new data directory: initdb is half a second of a core, a copy a
 * twentieth (PostgreSQL's files, about 40 MB). For the test platforms,
 * which start a fresh database each (about 23 per `npm test`); `npm start`
 * runs initdb as before. Copies of one template share its system
 * identifier, which only replication between them would notice.
 *
 * The template's name says what made it (the initdb binary, by path, size
 * and modification time; the superuser; the account that owns the files),
 * so another PostgreSQL or user never reuses a cluster it cannot run.
 * Safe when several processes start at once: each one that finds no
 * template makes one under a name of its own and renames it into place;
 * the first rename wins and the others' copies are removed.
 */
export async function initialiseFromTemplate(opts: {
  templates: string;
  dataDir: string;
  initdbPath: string;
  superuser: string;
  user: RunAsUser | undefined;
  /** Runs initdb into the directory given (prepared as a data directory). */
  initdb: (dir: string) => Promise<void>;
}): Promise<void> {
  const binary = statSync(opts.initdbPath);
  const identity = [opts.initdbPath, binary.size, binary.mtimeMs, opts.superuser, opts.user?.uid ?? process.getuid?.() ?? ""].join("\n");
  const template = join(opts.templates, `cluster-${createHash("sha256").update(identity).digest("hex").slice(0, 16)}`);
  if (!isInitialised(template)) {
    // Traversable by the account postgres runs as, which writes the template's files (initdb).
    mkdirSync(opts.templates, { recursive: true, mode: 0o755 });
    chmodSync(opts.templates, 0o755);
    const making = `${template}.${process.pid}.tmp`;
    rmSync(making, { recursive: true, force: true });
    prepareDataDir(making, opts.user);
    await opts.initdb(making);
    try {
      renameSync(making, template);
    } catch {
      // Another process put its template there first: the same cluster, keep that one.
      rmSync(making, { recursive: true, force: true });
      if (!isInitialised(template)) throw new Error(`embedded-postgres: cannot put the cluster template in place at ${template}`);
    }
  }
  copyCluster(template, opts.dataDir, opts.user);
}

/**
 * Copies a cluster's files and folders with their modes (PostgreSQL makes
 * its folders 0700); as root, hands each to the account postgres runs as
 * (a copy made by root belongs to root).
 */
function copyCluster(from: string, to: string, user: RunAsUser | undefined): void {
  for (const e of readdirSync(from, { withFileTypes: true })) {
    const source = join(from, e.name);
    const target = join(to, e.name);
    if (e.isDirectory()) {
      mkdirSync(target);
      chmodSync(target, statSync(source).mode & 0o777);
      copyCluster(source, target, user);
    } else if (e.isFile()) copyFileSync(source, target);
    else throw new Error(`embedded-postgres: the cluster template holds ${source}, neither a file nor a folder`);
    if (user) lchownSync(target, user.uid, user.gid);
  }
}
