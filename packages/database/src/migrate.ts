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
 */
export async function migrate(target: Database | string, opts: MigrateOptions): Promise<MigrateResult> {
  const timeoutMs = opts.timeoutMs ?? 300_000;
  const db =
    typeof target === "string"
      ? createDatabase({ name: `${opts.schema}-migrations`, connectionString: target, maxConnections: 1, fallbackTimeoutMs: timeoutMs })
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

async function applyAll(db: Database, opts: MigrateOptions): Promise<MigrateResult> {
  const schema = pg.escapeIdentifier(opts.schema);
  const table = `${schema}.schema_migrations`;
  const lock = (tx: Tx) => tx.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`migrate:${opts.schema}`]);

  const files = (await readdir(opts.directory)).filter((f) => f.endsWith(".sql")).sort();
  const done = await db.transaction(async (tx) => {
    await lock(tx);
    // Only create it when missing: a least-privilege role owns its schema
    // but may not create schemas, and PostgreSQL checks that privilege even
    // for CREATE SCHEMA IF NOT EXISTS on one that exists.
    const exists = await tx.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [opts.schema]);
    if (exists.rowCount === 0) await tx.query(`CREATE SCHEMA ${schema}`);
    await tx.query(`CREATE TABLE IF NOT EXISTS ${table} (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    const { rows } = await tx.query<{ name: string }>(`SELECT name FROM ${table}`);
    return new Set(rows.map((r) => r.name));
  });

  const applied: string[] = [];
  for (const file of files) {
    if (done.has(file)) continue;
    const sql = await readFile(join(opts.directory, file), "utf8");
    const appliedNow = await db.transaction(async (tx) => {
      await lock(tx);
      // Another process may have applied it while we waited for the lock.
      const seen = await tx.query(`SELECT 1 FROM ${table} WHERE name = $1`, [file]);
      if (seen.rowCount) return false;
      await tx.query(`SET LOCAL search_path TO ${schema}, public`);
      await tx.query(sql);
      await tx.query(`INSERT INTO ${table} (name) VALUES ($1)`, [file]);
      return true;
    });
    if (appliedNow) {
      applied.push(file);
      opts.log?.(`migrate ${opts.schema}: applied ${file}`);
    }
  }
  return { applied };
}
