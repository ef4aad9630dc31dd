/**
 * What the outbox costs PostgreSQL per order, measured on the embedded
 * PostgreSQL with pg_stat_statements (docs/outbox.md, "What an order's
 * receipt costs the database").
 *
 *   node --import tsx services/receipts/bench/outbox-cost.ts [orders per variant, default 1500]
 *
 * For each variant, in one run on one cluster: clients place orders (one
 * transaction each: BEGIN + SET LOCAL statement_timeout, an order row,
 * `receipts.enqueue_receipt`, COMMIT, as orders does) at a steady pace while
 * the real queue (src/queue.ts) and the real job (send-receipt.ts,
 * receipt-store.ts, with an in-process mailer that answers at once) drain
 * them. When every receipt is sent, it prints the CPU time the PostgreSQL
 * processes spent (/proc, all backends and background processes) and the
 * statements' execution time (pg_stat_statements), each per order, and the
 * statements that cost most. The "no outbox" variant stores the order alone:
 * the difference is the outbox's cost. CPU time per order, not throughput:
 * the machine is shared.
 */
import { readdirSync, readFileSync } from "node:fs";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { runMigrations } from "graphile-worker";
import { startEmbeddedPostgres } from "../../../packages/embedded-postgres/src/index.ts";
import { createDatabase } from "@platform/database";
import pino from "pino";
import { startQueue, type QueueTuning } from "../src/queue.ts";
import { ReceiptStore } from "../src/receipt-store.ts";
import { createSendReceipt } from "../src/send-receipt.ts";

const ordersPerVariant = Number(process.argv[2] ?? 1500);
const clients = 4;
/** Orders per second, all clients together: a steady stream like the bench's, not a backlog. */
const ratePerSecond = 150;

interface Variant {
  name: string;
  /** The function the order's transaction calls; none: the order alone. */
  enqueue?: "enqueue_receipt" | "enqueue_receipt_as_before";
  tuning?: Partial<QueueTuning>;
  /** The receipt's bookkeeping statements each in BEGIN + SET LOCAL ... COMMIT, as before (default: one autocommitted statement each). */
  bookkeepingInTransactions?: boolean;
}

const before: Partial<QueueTuning> = { localQueueSize: -1, completeJobBatchDelayMs: 0, genericPlans: false };
const variants: Variant[] = [
  { name: "no outbox (the order alone)" },
  { name: "before", enqueue: "enqueue_receipt_as_before", tuning: before, bookkeepingInTransactions: true },
  { name: "generic plans", enqueue: "enqueue_receipt", tuning: { ...before, genericPlans: true }, bookkeepingInTransactions: true },
  { name: "generic plans + one-statement bookkeeping", enqueue: "enqueue_receipt", tuning: { ...before, genericPlans: true } },
  { name: "+ local queue 9, completions batched 10 ms", enqueue: "enqueue_receipt", tuning: { localQueueSize: 9, completeJobBatchDelayMs: 10 } },
];

/** Migration 001's enqueue_receipt, before migration 003 gave it generic plans. */
const enqueueAsBefore = `CREATE FUNCTION receipts.enqueue_receipt_as_before(order_id uuid) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  INSERT INTO receipts.receipts (order_id) VALUES (enqueue_receipt_as_before.order_id) ON CONFLICT DO NOTHING;
  IF FOUND THEN
    PERFORM receipts.add_job('send_receipt', json_build_object('orderId', enqueue_receipt_as_before.order_id),
      job_key := 'receipt:' || enqueue_receipt_as_before.order_id::text, max_attempts := 10);
  END IF;
END $$`;

const migrations = fileURLToPath(new URL("../migrations", import.meta.url));
const logger = pino({ level: "warn" });

function clockTicksOf(pid: number): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    // utime, stime, cutime, cstime (fields 14-17; index from the state field, 3)
    return Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
  } catch {
    return 0;
  }
}

/**
 * CPU time (ms) of the postmaster's children by kind: backends by their
 * user (orders, receipts), background processes by name, and under
 * "exited" those that ended (autovacuum workers), from the postmaster's cutime.
 */
function postgresCpuMs(postmaster: number): Map<string, number> {
  const byKind = new Map<string, number>([["exited + postmaster", clockTicksOf(postmaster) * 10]]);
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      const ppid = Number(stat.split(") ")[1]!.split(" ")[1]);
      if (ppid !== postmaster) continue;
      const title = readFileSync(`/proc/${d}/cmdline`, "utf8").replace(/\0/g, " ");
      const m = /^postgres: (\S+) \S+ \d/.exec(title) ?? /^postgres: (.*?)\s*$/.exec(title);
      const kind = m?.[1] ?? "other";
      byKind.set(kind, (byKind.get(kind) ?? 0) + clockTicksOf(Number(d)) * 10); // USER_HZ = 100
    } catch {}
  }
  return byKind;
}

const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
function diff(after: Map<string, number>, before: Map<string, number>): Map<string, number> {
  const d = new Map<string, number>();
  for (const [k, v] of after) d.set(k, v - (before.get(k) ?? 0));
  return d;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const dir = await mkdtemp(join(tmpdir(), "outbox-cost-"));
  // The cluster may run as another user (as root, embedded-postgres drops to one).
  await chmod(dir, 0o755);
  const pgServer = await startEmbeddedPostgres({
    dataDir: join(dir, "data"),
    settings: { shared_preload_libraries: "pg_stat_statements", "pg_stat_statements.track": "all", "pg_stat_statements.max": "5000" },
  });
  const su = new pg.Pool({ connectionString: pgServer.url, max: 2 });
  su.on("error", () => {});
  const urlAs = (user: string) => pgServer.url.replace("postgres@", `${user}@`);
  try {
    await su.query(`CREATE EXTENSION pg_stat_statements;
      CREATE ROLE receipts LOGIN; CREATE ROLE orders LOGIN;
      CREATE SCHEMA receipts AUTHORIZATION receipts; CREATE SCHEMA orders AUTHORIZATION orders;`);
    const receiptsPool = new pg.Pool({ connectionString: urlAs("receipts"), max: 2 });
    for (const f of readdirSync(migrations).sort()) await receiptsPool.query(readFileSync(join(migrations, f), "utf8"));
    await runMigrations({ pgPool: receiptsPool, schema: "receipts" });
    await receiptsPool.query(enqueueAsBefore);
    await receiptsPool.query(
      "GRANT USAGE ON SCHEMA receipts TO orders; GRANT EXECUTE ON FUNCTION receipts.enqueue_receipt(uuid), receipts.enqueue_receipt_as_before(uuid) TO orders",
    );
    await receiptsPool.end();
    const ordersPool = new pg.Pool({ connectionString: urlAs("orders"), max: clients });
    ordersPool.on("error", () => {});
    await ordersPool.query("CREATE TABLE orders.orders (id uuid PRIMARY KEY, customer_id text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())");

    console.log(
      `${ordersPerVariant} orders per variant, ${clients} clients, ${ratePerSecond}/s; load average ${(await import("node:os")).loadavg()[0]!.toFixed(1)}\n`,
    );
    const results: string[] = [];
    for (const v of variants) {
      const db = createDatabase({ name: "receipts-db", connectionString: urlAs("receipts"), maxConnections: 4, minBudgetMs: 50, logger });
      const sendReceipt = createSendReceipt({
        store: new ReceiptStore(v.bookkeepingInTransactions ? { session: (fn) => db.transaction(fn) } : db),
        mailer: { sendReceipt: async (req) => ({ messageId: `m-${req.orderId}`, duplicate: false }) as never },
        schedule: { baseMs: 1000, capMs: 60_000, maxAttempts: 20 },
        jobTimeoutMs: 5000,
        pauseAfterFailureMs: 5000,
        logger,
      });
      const queue = v.enqueue
        ? await startQueue({
            connectionString: urlAs("receipts"),
            concurrency: 8,
            pollIntervalMs: 1000,
            heartbeatIntervalMs: 10_000,
            sendReceipt,
            logger,
            tuning: v.tuning,
          })
        : undefined;
      await sleep(500);
      await su.query("SELECT pg_stat_statements_reset()");
      const cpuBefore = postgresCpuMs(pgServer.pid);
      const ids: string[] = [];
      let next = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: clients }, async () => {
          const c = await ordersPool.connect();
          try {
            for (;;) {
              const i = next++;
              if (i >= ordersPerVariant) return;
              const due = t0 + (i * 1000) / ratePerSecond;
              const wait = due - performance.now();
              if (wait > 0) await sleep(wait);
              const id = randomUUID();
              ids.push(id);
              await c.query("BEGIN; SET LOCAL statement_timeout = 2000");
              await c.query(
                v.enqueue
                  ? `WITH o AS (INSERT INTO orders.orders (id, customer_id) VALUES ($1, 'c')) SELECT receipts.${v.enqueue}($1)`
                  : "WITH o AS (INSERT INTO orders.orders (id, customer_id) VALUES ($1, 'c')) SELECT 1",
                [id],
              );
              await c.query("COMMIT");
            }
          } finally {
            c.release();
          }
        }),
      );
      if (v.enqueue) {
        for (;;) {
          const r = await su.query("SELECT count(*)::int AS n FROM receipts.receipts WHERE order_id = ANY($1) AND state = 'sent'", [ids]);
          if (r.rows[0].n === ids.length) break;
          await sleep(50);
        }
      }
      const cpu = diff(postgresCpuMs(pgServer.pid), cpuBefore);
      const cpuMs = total(cpu);
      const top = await su.query<{ calls: number; ms: number; query: string }>(
        `SELECT calls::int, total_exec_time AS ms, regexp_replace(query, '\\s+', ' ', 'g') AS query FROM pg_stat_statements
          WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY total_exec_time DESC LIMIT 12`,
      );
      const all = await su.query<{ ms: number }>(
        "SELECT sum(total_exec_time) AS ms FROM pg_stat_statements WHERE toplevel AND query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE '%receipts.receipts WHERE order_id = ANY%'",
      );
      await queue?.stop();
      await db.close();
      const n = ordersPerVariant;
      const line = `${v.name}: PostgreSQL CPU ${(cpuMs / n).toFixed(3)} ms/order, top-level statements ${(all.rows[0]!.ms / n).toFixed(3)} ms/order`;
      results.push(line);
      console.log(line);
      console.log(`  CPU by process: ${[...cpu].map(([k, ms]) => `${k} ${(ms / n).toFixed(3)}`).join(", ")}`);
      for (const s of top.rows) console.log(`  ${(s.ms / n).toFixed(4)} ms/order  ${(s.calls / n).toFixed(2)} calls/order  ${s.query.slice(0, 150)}`);
      console.log();
      await su.query("TRUNCATE orders.orders").catch(() => {});
    }
    console.log(results.join("\n"));
    await ordersPool.end();
  } finally {
    await su.end();
    await pgServer.stop("fast");
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
