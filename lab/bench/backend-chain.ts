/**
 * Which chain a PostgreSQL backend works for, from its row in
 * pg_stat_activity: both chains share one server, each with a database of
 * its own (the platform's; lab/plain-chain's `plain_chain`), so a backend's
 * database names its chain. The bench's own connections are no chain's:
 * the database ceiling's pool (on the plain chain's database, but its work
 * is the ceiling's, "db") and its watchers (the receipts outbox, this
 * lookup), whose CPU stays with the server's own.
 */
import type { System } from "./cells.js";

export interface BackendRow {
  pid: number;
  /** Null for the server's background processes. */
  datname: string | null;
  applicationName: string;
}

/** The application_name of the database ceiling's pool (db-ceiling.ts). */
export const ceilingApplicationName = "bench-db-ceiling";

export function chainOfBackend(row: BackendRow, databases: Readonly<Record<System, string>>): System | "db" | undefined {
  if (row.applicationName === ceilingApplicationName) return "db";
  if (row.applicationName.startsWith("bench-")) return undefined;
  if (row.datname === databases.platform) return "platform";
  if (row.datname === databases.plain) return "plain";
  return undefined;
}

/** The backends that work for a chain (or the ceiling), by pid. */
export function backendChains(rows: readonly BackendRow[], databases: Readonly<Record<System, string>>): Map<number, System | "db"> {
  const chains = new Map<number, System | "db">();
  for (const row of rows) {
    const chain = chainOfBackend(row, databases);
    if (chain !== undefined) chains.set(row.pid, chain);
  }
  return chains;
}
