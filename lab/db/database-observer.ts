import pg from "pg";

export interface OrderCounts {
  /** orders.orders rows for this run's customers. */
  orders: number;
  /** Rows beyond the first for one customer_id (one customer_id = one user operation). */
  duplicates: number;
  /** Orders stored for operations whose user saw a failure: work done for nobody. */
  ordersForFailedCalls: number;
}

export interface LateStatements {
  /** Distinct statements seen still running more than the client's timeout after they started. */
  count: number;
  /** Their database time beyond that point, summed (lower bound: sampled). */
  seconds: number;
}

/**
 * Watches the database as its superuser: samples pg_stat_activity for
 * statements of the services that outlive the client's timeout (a statement
 * that started after its user's request did, and is still running
 * timeout ms later, is running for nobody), and counts orders after a run.
 * Tolerates the database being down (failover scenario).
 */
export class DatabaseObserver {
  private pool: pg.Pool;
  private timer: NodeJS.Timeout | undefined;
  private busy = false;
  /** key pid:query_start -> longest age seen (ms). */
  private readonly late = new Map<string, number>();

  constructor(
    private databaseUrl: string,
    private readonly clientTimeoutMs: number,
  ) {
    this.pool = this.createPool();
  }

  private createPool(): pg.Pool {
    const pool = new pg.Pool({ connectionString: this.databaseUrl, max: 2, application_name: "storm-lab", connectionTimeoutMillis: 1000 });
    pool.on("error", () => {}); // the server going away kills idle connections
    return pool;
  }

  start(intervalMs = 200): void {
    this.timer = setInterval(() => void this.sample(), intervalMs);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private async sample(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const { rows } = await this.pool.query<{ pid: number; started: string; age_ms: number }>(
        `SELECT pid, query_start::text AS started, extract(epoch FROM clock_timestamp() - query_start) * 1000 AS age_ms
           FROM pg_stat_activity
          WHERE state = 'active' AND application_name IN ('pricing', 'orders') AND query_start IS NOT NULL`,
      );
      for (const r of rows) {
        const age = Number(r.age_ms);
        if (age <= this.clientTimeoutMs) continue;
        const key = `${r.pid}:${r.started}`;
        this.late.set(key, Math.max(age, this.late.get(key) ?? 0));
      }
    } catch {
      // Database down or busy: skip this sample.
    } finally {
      this.busy = false;
    }
  }

  lateStatements(): LateStatements {
    let seconds = 0;
    for (const age of this.late.values()) seconds += (age - this.clientTimeoutMs) / 1000;
    return { count: this.late.size, seconds: Math.round(seconds * 10) / 10 };
  }

  async orderCounts(customerPrefix: string, failedCustomers: readonly string[]): Promise<OrderCounts> {
    const like = `${customerPrefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    const totals = await this.query<{ orders: string; duplicates: string }>(
      `SELECT coalesce(sum(n), 0) AS orders, coalesce(sum(n - 1), 0) AS duplicates
         FROM (SELECT count(*) AS n FROM orders.orders WHERE customer_id LIKE $1 GROUP BY customer_id) per_customer`,
      [like],
    );
    const ghosts = await this.query<{ n: string }>("SELECT count(*) AS n FROM orders.orders WHERE customer_id = ANY($1::text[])", [failedCustomers]);
    return {
      orders: Number(totals[0]?.orders ?? 0),
      duplicates: Number(totals[0]?.duplicates ?? 0),
      ordersForFailedCalls: Number(ghosts[0]?.n ?? 0),
    };
  }

  /** Queries, retrying for a while: the database may be coming back from a restart. */
  private async query<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<R[]> {
    let last: unknown;
    for (let i = 0; i < 20; i++) {
      try {
        return (await this.pool.query<R>(text, values)).rows;
      } catch (e) {
        last = e;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    throw last;
  }

  async close(): Promise<void> {
    this.stop();
    await this.pool.end().catch(() => {});
  }
}
