import type { Database } from "./create-database.js";

/**
 * A service's database as its health check sees it (the runtime's
 * `serve({ ownResources })`): it serves when one read-only statement
 * answers within the caller's deadline (injected faults apply, as to any
 * transaction), and it is restarting while its server refuses connections
 * and transactions wait for it (reconnect-gate.ts).
 */
export function databaseResources(db: Database): { check(): Promise<void>; restarting(): string | undefined } {
  return {
    async check() {
      await db.transaction((tx) => tx.query("SELECT 1"), { readOnly: true });
    },
    restarting: () => (db.serverDown ? db.name : undefined),
  };
}
