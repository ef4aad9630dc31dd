import { createHash } from "node:crypto";
import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { createScope, runInScope } from "@platform/resilience";
import pg from "pg";
import { type Database, createDatabase } from "./create-database.js";
import type { Tx } from "./tx.js";

export interface MigrateOptions {
  /** Schema the migrations belong to; created if missing, and first on search_path while they run. */
  schema: string;
  /** Directory of `*.sql` files, applied in filename order (name them 0001-..., 0002-...). */
  directory: string;
  log?: (msg: string) => void;
  /** Deadline for the whole run. Default 5 minutes: a schema change is not a request. */
  timeoutMs?: number;
}

/** The marker that makes a migration run outside a transaction. */
export const noTransactionMarker = "-- migrate: no-transaction";

/** An applied migration file that no longer matches what was applied. */
export class MigrationChangedError extends Error {
  constructor(
    readonly schema: string,
    readonly file: string,
    readonly recorded: string,
    readonly current: string,
  ) {
    super(
      `migrate ${schema}: ${file} was changed after it was applied (sha256 ${recorded.slice(0, 12)} applied, ${current.slice(0, 12)} now); ` +
        "restore it and put the change in a new migration file",
    );
    this.name = "MigrationChangedError";
  }
}

export interface MigrateResult {
  /** Files applied by this call (empty when everything was already applied). */
  applied: string[];
}

/**
 * Applies the files in `directory` that `<schema>.schema_migrations` does
 * not list yet, each in its own transaction together with its bookkeeping
 * row, so a file is either applied and recorded or neither.
 *
 * Every transaction first takes a transaction-scoped advisory lock on the
 * schema: services (or replicas) starting at the same time apply each file
 * exactly once, and the loser simply finds it recorded. Transaction-scoped
 * because a session lock would outlive a failed run on a pooled connection.
 * The lock is tried, not waited for: a waiter retries in a new short
 * transaction every LOCK_RETRY_MS. A waiting transaction would hold a
 * snapshot that CREATE INDEX CONCURRENTLY in the holder waits for, and the
 * two would deadlock.
 *
 * Each applied file's SHA-256 is recorded. A file edited after it was
 * applied fails the run (MigrationChangedError names it): the change would
 * otherwise be skipped silently on every database that already has the
 * file, and run on every new one. Write a new migration instead. Rows
 * recorded before checksums existed get the file's checksum on the next run.
 *
 * A file whose first line is `-- migrate: no-transaction` runs outside a
 * transaction, for the statements PostgreSQL refuses inside one (CREATE
 * INDEX CONCURRENTLY). It must hold exactly one statement (PostgreSQL runs
 * several in one implicit transaction), name its tables with their schema
 * (no search_path is set: that would be session state), and be safe to run
 * twice (IF NOT EXISTS): it is recorded only after it succeeded, under a
 * session-level advisory lock held for that one file. That lock needs a
 * session of its own, so such a file must not run through a
 * transaction-pooling PgBouncer (docs/scaling.md).
 */
export async function migrate(target: Database | string, opts: MigrateOptions): Promise<MigrateResult> {
  const timeoutMs = opts.timeoutMs ?? 300_000;
  const db =
    typeof target === "string"
      ? createDatabase({ name: `${opts.schema}-migrations`, connectionString: target, maxConnections: 1, fallbackTimeoutMs: timeoutMs, minBudgetMs: 0 })
      : target;
  // Our own scope: migrations run at startup, outside any request, and must
  // not inherit the short request fallback (or an unrelated caller's deadline).
  const scope = createScope({ timeoutMs, requestId: "", procedure: `migrate/${opts.schema}` });
  try {
    return await runInScope(scope, () => applyAll(db, opts));
  } finally {
    scope.dispose();
    if (typeof target === "string") await db.close();
  }
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** How long a migrator that found the schema's lock taken waits before trying again. */
const LOCK_RETRY_MS = 50;
const lockTaken = Symbol("lock taken");

/**
 * Runs `fn` under the schema's advisory lock, in `db.transaction` (lock
 * released at its end) or `db.session` (released by `fn`'s caller here).
 * Tries the lock and, when another migrator holds it, ends the transaction
 * and tries again later, so no waiter holds a snapshot open.
 */
async function underLock<T>(db: Database, lockKey: string, mode: "transaction" | "session", fn: (tx: Tx) => Promise<T>): Promise<T> {
  for (;;) {
    const run = mode === "transaction" ? db.transaction.bind(db) : db.session.bind(db);
    const result = await run(async (tx) => {
      const fn_ = mode === "transaction" ? "pg_try_advisory_xact_lock" : "pg_try_advisory_lock";
      const { rows } = await tx.query<{ locked: boolean }>(`SELECT ${fn_}(hashtext($1)) AS locked`, [lockKey]);
      if (!rows[0]?.locked) return lockTaken;
      if (mode === "transaction") return fn(tx);
      try {
        return await fn(tx);
      } finally {
        // A session lock outlives the statement: release it on every path.
        await tx.query("SELECT pg_advisory_unlock(hashtext($1))", [lockKey]);
      }
    });
    if (result !== lockTaken) return result as T;
    await new Promise((r) => setTimeout(r, LOCK_RETRY_MS));
  }
}

async function applyAll(db: Database, opts: MigrateOptions): Promise<MigrateResult> {
  const schema = pg.escapeIdentifier(opts.schema);
  const table = `${schema}.schema_migrations`;
  const lockKey = `migrate:${opts.schema}`;

  const names = (await readdir(opts.directory)).filter((f) => f.endsWith(".sql")).sort();
  const files = await Promise.all(
    names.map(async (name) => {
      const sql = await readFile(join(opts.directory, name), "utf8");
      return { name, sql, checksum: sha256(sql), noTransaction: sql.split("\n", 1)[0]!.trim() === noTransactionMarker };
    }),
  );
  const recorded = await underLock(db, lockKey, "transaction", async (tx) => {
    // Only create it when missing: a least-privilege role owns its schema
    // but may not create schemas, and PostgreSQL checks that privilege even
    // for CREATE SCHEMA IF NOT EXISTS on one that exists.
    const exists = await tx.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [opts.schema]);
    if (exists.rowCount === 0) await tx.query(`CREATE SCHEMA ${schema}`);
    await tx.query(`CREATE TABLE IF NOT EXISTS ${table} (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    await tx.query(`ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS checksum text`);
    const { rows } = await tx.query<{ name: string; checksum: string | null }>(`SELECT name, checksum FROM ${table}`);
    // Recorded before checksums existed: trust what is there now, once.
    for (const row of rows) {
      const file = files.find((f) => f.name === row.name);
      if (row.checksum === null && file) {
        await tx.query(`UPDATE ${table} SET checksum = $2 WHERE name = $1`, [row.name, file.checksum]);
        row.checksum = file.checksum;
      }
    }
    return new Map(rows.map((r) => [r.name, r.checksum]));
  });
  for (const file of files) {
    const checksum = recorded.get(file.name);
    if (checksum && checksum !== file.checksum) throw new MigrationChangedError(opts.schema, file.name, checksum, file.checksum);
  }

  const applied: string[] = [];
  for (const file of files) {
    if (recorded.has(file.name)) continue;
    const appliedNow = file.noTransaction
      ? await applyOutsideTransaction(db, table, lockKey, file)
      : await applyInTransaction(db, schema, table, lockKey, file);
    if (appliedNow) {
      applied.push(file.name);
      opts.log?.(`migrate ${opts.schema}: applied ${file.name}${file.noTransaction ? " (outside a transaction)" : ""}`);
    }
  }
  return { applied };
}

interface MigrationFile {
  name: string;
  sql: string;
  checksum: string;
}

async function applyInTransaction(db: Database, schema: string, table: string, lockKey: string, file: MigrationFile): Promise<boolean> {
  return underLock(db, lockKey, "transaction", async (tx) => {
    // Another process may have applied it while we waited for the lock.
    const seen = await tx.query(`SELECT 1 FROM ${table} WHERE name = $1`, [file.name]);
    if (seen.rowCount) return false;
    await tx.query(`SET LOCAL search_path TO ${schema}, public`);
    await tx.query(file.sql);
    await tx.query(`INSERT INTO ${table} (name, checksum) VALUES ($1, $2)`, [file.name, file.checksum]);
    return true;
  });
}

async function applyOutsideTransaction(db: Database, table: string, lockKey: string, file: MigrationFile): Promise<boolean> {
  return underLock(db, lockKey, "session", async (s) => {
    const seen = await s.query(`SELECT 1 FROM ${table} WHERE name = $1`, [file.name]);
    if (seen.rowCount) return false;
    await s.query(file.sql);
    await s.query(`INSERT INTO ${table} (name, checksum) VALUES ($1, $2)`, [file.name, file.checksum]);
    return true;
  });
}
