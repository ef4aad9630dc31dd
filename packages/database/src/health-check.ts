import type { Database } from "./create-database.js";

/**
 * One read-only statement on `db`, within the caller's deadline: what a
 * service's health check asks of its database (serve's `ownResources`).
 * It waits for a restarting server like any transaction, and sees the
 * same injected faults.
 */
export async function databaseAnswers(db: Database): Promise<void> {
  await db.transaction((tx) => tx.query("SELECT 1"), { readOnly: true });
}
