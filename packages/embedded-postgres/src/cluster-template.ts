import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  closeSync,
  copyFileSync,
  ftruncateSync,
  lchownSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isInitialised, prepareDataDir } from "./data-dir.js";
import type { RunAsUser } from "./run-as-user.js";

/**
 * Where the repository's tests keep their cluster templates (the test
 * platforms, the database specs): one per machine and PostgreSQL build.
 */
export const testClusterTemplates = join(tmpdir(), "platform-test-postgres-templates");

/**
 * A fresh cluster, made once by initdb under `templates` and copied into
 * each new data directory. For the test platforms and the database specs,
 * which start a fresh database each (about 40 per `npm test`); `npm start`
 * runs initdb as before. Copies of one template share its system
 * identifier, which only replication between them would notice.
 *
 * The template is sparse: a third of initdb's 39 MB is pages of zeros (most
 * of the 16 MB WAL segment, which PostgreSQL fills with zeros ahead of its
 * records), and reading a hole gives the same zeros back. On Linux, GNU
 * `cp --sparse=always` copies only the data (27 MB), keeping owners and
 * modes: 0.1 CPU seconds against 0.3 to 0.5 for node's copyFileSync, which
 * writes the zeros out, and initdb's 0.5 (measured on the 2-core machine,
 * docs/testing.md).
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
  // "sparse": templates made before their zero pages became holes are not reused (they would work, slower).
  const identity = [opts.initdbPath, binary.size, binary.mtimeMs, opts.superuser, opts.user?.uid ?? process.getuid?.() ?? "", "sparse"].join("\n");
  const template = join(opts.templates, `cluster-${createHash("sha256").update(identity).digest("hex").slice(0, 16)}`);
  if (!isInitialised(template)) {
    // Traversable by the account postgres runs as, which writes the template's files (initdb).
    mkdirSync(opts.templates, { recursive: true, mode: 0o755 });
    chmodSync(opts.templates, 0o755);
    const making = `${template}.${process.pid}.tmp`;
    rmSync(making, { recursive: true, force: true });
    prepareDataDir(making, opts.user);
    await opts.initdb(making);
    punchZeroPages(making, opts.user);
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

/** PostgreSQL's page: the unit in which its files are zeros or data. */
const pageSize = 8192;
const zeroPage = Buffer.alloc(pageSize);

/**
 * Rewrites every file of a cluster that holds whole pages of zeros as a
 * sparse file: the same bytes when read, holes where the zeros were.
 * Once per template; the copies keep the holes (copyCluster).
 */
function punchZeroPages(dir: string, user: RunAsUser | undefined): void {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, e.name);
    if (e.isDirectory()) {
      punchZeroPages(path, user);
      continue;
    }
    const data = readFileSync(path);
    const pages: { at: number; length: number }[] = [];
    for (let at = 0; at < data.length; at += pageSize) pages.push({ at, length: Math.min(pageSize, data.length - at) });
    const withData = pages.filter((p) => !data.subarray(p.at, p.at + p.length).equals(zeroPage.subarray(0, p.length)));
    if (withData.length === pages.length) continue;
    const sparse = `${path}.sparse`;
    const fd = openSync(sparse, "w", statSync(path).mode & 0o777);
    try {
      for (const p of withData) writeSync(fd, data, p.at, p.length, p.at);
      ftruncateSync(fd, data.length);
    } finally {
      closeSync(fd);
    }
    if (user) lchownSync(sparse, user.uid, user.gid);
    renameSync(sparse, path);
  }
}

/**
 * Copies a cluster into an empty data directory. With GNU cp (Linux), one
 * `cp -a --sparse=always`: holes stay holes, and owners and modes are kept
 * (the template's files belong to the account postgres runs as). Elsewhere,
 * or if that cp refuses (BusyBox has no --sparse), in node.
 */
export function copyCluster(from: string, to: string, user: RunAsUser | undefined, cpCommand = "cp"): void {
  if (process.platform === "linux") {
    const cp = spawnSync(cpCommand, ["-a", "--sparse=always", `${from}/.`, to], { stdio: "ignore" });
    if (cp.status === 0) return;
    for (const e of readdirSync(to)) rmSync(join(to, e), { recursive: true, force: true });
  }
  copyTree(from, to, user);
}

/**
 * Copies a cluster's files and folders with their modes (PostgreSQL makes
 * its folders 0700); as root, hands each to the account postgres runs as
 * (a copy made by root belongs to root).
 */
function copyTree(from: string, to: string, user: RunAsUser | undefined): void {
  for (const e of readdirSync(from, { withFileTypes: true })) {
    const source = join(from, e.name);
    const target = join(to, e.name);
    if (e.isDirectory()) {
      mkdirSync(target);
      chmodSync(target, statSync(source).mode & 0o777);
      copyTree(source, target, user);
    } else if (e.isFile()) copyFileSync(source, target);
    else throw new Error(`embedded-postgres: the cluster template holds ${source}, neither a file nor a folder`);
    if (user) lchownSync(target, user.uid, user.gid);
  }
}
