import pg from "pg";

/** The pool a plain service opens: the platform's size (DB_POOL_MAX defaults to 10), nothing else. */
export function plainPool(connectionString: string, applicationName: string, max = 10, options?: string): pg.Pool {
  const pool = new pg.Pool({ connectionString, max, application_name: applicationName, ...(options ? { options } : {}) });
  // An idle connection dying must not kill the process (pg-pool drops it already).
  pool.on("error", () => {});
  return pool;
}

/**
 * BEGIN, the body, COMMIT (ROLLBACK when it throws): the same round trips
 * as the platform's transactions, whose BEGIN carries `SET LOCAL
 * statement_timeout` in the same round trip. No deadline, no cancel.
 */
export async function transaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>, opts: { readOnly?: boolean } = {}): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query(opts.readOnly ? "BEGIN READ ONLY" : "BEGIN");
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (e) {
    await client.query("ROLLBACK").catch(() => {});
    throw e;
  } finally {
    client.release();
  }
}
