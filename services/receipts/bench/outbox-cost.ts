/**
 * What the outbox costs PostgreSQL per order, and how long a receipt waits
 * from its order's commit to the mailer's call, on the embedded PostgreSQL
 * with pg_stat_statements (docs/outbox.md, "What a receipt costs").
 *
 *   node --import tsx services/receipts/bench/outbox-cost.ts [orders per variant, default 1500]
 *
 * Cost: for each variant, in one run on one cluster, clients place orders
 * (one transaction each: BEGIN + SET LOCAL statement_timeout, an order row
 * and `receipts.enqueue_receipt`, COMMIT, as orders does) at a steady 150 a
 * second while the real relay (src/relay.ts, receipt-batches.ts,
 * deliver-batch.ts, with an in-process mailer that answers at once) sends
 * them. When every receipt is sent, it prints the CPU time the PostgreSQL
 * processes spent (/proc, all backends and background processes, those that
 * exited included) and the statements' execution time (pg_stat_statements),
 * each per order, and the statements that cost most. The "no outbox"
 * variant stores the order alone: the difference is the outbox's cost. CPU
 * time per order, not throughput: the machine is shared.
 *
 * Latency, with the shipped settings: from each order's commit (as its
 * client sees it) to the mailer's call for its receipt, p50 and p99, in a
 * quiet system (orders 10 a second) and for a burst of 1,000 orders placed
 * as fast as 16 clients can. Idle: what the relay's polling costs
 * PostgreSQL per second with nothing to send.
 */
import { readdirSync, readFileSync } from "node:fs";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { startEmbeddedPostgres } from "../../../packages/embedded-postgres/src/index.ts";
import { createDatabase } from "@platform/database";
import pino from "pino";
import { loadConfig } from "../src/config.ts";
import { deliverBatch } from "../src/deliver-batch.ts";
import { ReceiptBatches } from "../src/receipt-batches.ts";
import { startRelay } from "../src/relay.ts";

const ordersPerVariant = Number(process.argv[2] ?? 1500);
const clients = 4;
/** Orders per second, all clients together: a steady stream like the bench's, not a backlog. */
const ratePerSecond = 150;
const quiet = { orders: 100, ratePerSecond: 10 };
const burst = { orders: 1000, clients: 16 };
const idleSeconds = 10;

/** The service's defaults, as shipped. */
const shipped = loadConfig({ DATABASE_URL: "postgres://unused@127.0.0.1/unused" });

interface Variant {
  name: string;
  /** Whether the order's transaction writes the receipt (and a relay sends it). */
  outbox: boolean;
  pollIntervalMs?: number;
}

const variants: Variant[] = [
  { name: "no outbox (the order alone)", outbox: false },
  { name: `outbox, relay polling every ${shipped.pollIntervalMs} ms (shipped)`, outbox: true },
  { name: "outbox, relay polling every 10 ms", outbox: true, pollIntervalMs: 10 },
];

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
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

/** A relay as the service runs one, with `mailed` as its mailer: order id -> when it was called. */
function relayWith(receiptsUrl: string, mailed: Map<string, number>, pollIntervalMs: number) {
  const db = createDatabase({ name: "receipts-db", connectionString: receiptsUrl, maxConnections: shipped.dbPoolMax, minBudgetMs: 50, logger });
  let batches = 0;
  const relay = startRelay({
    batches: new ReceiptBatches(db, { statementTimeoutMs: shipped.statementTimeoutMs, lockTimeoutReserveMs: 5 }),
    deliver: (claimed, opts) =>
      deliverBatch(
        {
          mailer: {
            sendReceipt: async (req) => {
              if (!mailed.has(req.orderId)) mailed.set(req.orderId, performance.now());
              return { messageId: `m-${req.orderId}`, duplicate: false } as never;
            },
          },
          schedule: shipped.retry,
          sendTimeoutMs: shipped.sendTimeoutMs,
          concurrency: shipped.concurrency,
        },
        claimed,
        opts,
      ),
    batchSize: shipped.batchSize,
    leaseMs: shipped.leaseMs,
    pollIntervalMs,
    pauseAfterFailureMs: shipped.pauseAfterFailureMs,
    sendTimeoutMs: shipped.sendTimeoutMs,
    statementTimeoutMs: shipped.statementTimeoutMs,
    logger,
    onBatch: () => batches++,
  });
  return {
    batches: () => batches,
    async stop() {
      await relay.stop(10_000);
      await db.close();
    },
  };
}

/** Places `n` orders from `clientCount` clients, at `perSecond` (all together) or as fast as they can; returns each order's commit time. */
async function placeOrders(pool: pg.Pool, n: number, clientCount: number, perSecond: number | undefined, outbox: boolean): Promise<Map<string, number>> {
  const committed = new Map<string, number>();
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: clientCount }, async () => {
      const c = await pool.connect();
      try {
        for (;;) {
          const i = next++;
          if (i >= n) return;
          if (perSecond !== undefined) {
            const wait = t0 + (i * 1000) / perSecond - performance.now();
            if (wait > 0) await sleep(wait);
          }
          const id = randomUUID();
          await c.query("BEGIN; SET LOCAL statement_timeout = 2000");
          await c.query(
            outbox
              ? "WITH o AS (INSERT INTO orders.orders (id, customer_id) VALUES ($1, 'c')) SELECT receipts.enqueue_receipt($1)"
              : "WITH o AS (INSERT INTO orders.orders (id, customer_id) VALUES ($1, 'c')) SELECT 1",
            [id],
          );
          await c.query("COMMIT");
          committed.set(id, performance.now());
        }
      } finally {
        c.release();
      }
    }),
  );
  return committed;
}

async function allMailed(ids: Iterable<string>, mailed: Map<string, number>): Promise<void> {
  for (const id of ids) while (!mailed.has(id)) await sleep(10);
}

function latencyLine(label: string, committed: Map<string, number>, mailed: Map<string, number>): string {
  const waits = [...committed].map(([id, at]) => mailed.get(id)! - at).sort((a, b) => a - b);
  return `${label}: commit to mailer p50 ${percentile(waits, 50).toFixed(1)} ms, p99 ${percentile(waits, 99).toFixed(1)} ms, max ${waits.at(-1)!.toFixed(1)} ms (${waits.length} orders)`;
}

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
    const receiptsPool = new pg.Pool({ connectionString: urlAs("receipts"), max: 1 });
    for (const f of readdirSync(migrations).sort()) await receiptsPool.query(readFileSync(join(migrations, f), "utf8"));
    await receiptsPool.query("GRANT USAGE ON SCHEMA receipts TO orders; GRANT EXECUTE ON FUNCTION receipts.enqueue_receipt(uuid) TO orders");
    await receiptsPool.end();
    const ordersPool = new pg.Pool({ connectionString: urlAs("orders"), max: burst.clients });
    ordersPool.on("error", () => {});
    await ordersPool.query("CREATE TABLE orders.orders (id uuid PRIMARY KEY, customer_id text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())");

    console.log(`${ordersPerVariant} orders per variant, ${clients} clients, ${ratePerSecond}/s; load average ${loadavg()[0]!.toFixed(1)}\n`);
    const results: string[] = [];
    for (const v of variants) {
      const mailed = new Map<string, number>();
      const relay = v.outbox ? relayWith(urlAs("receipts"), mailed, v.pollIntervalMs ?? shipped.pollIntervalMs) : undefined;
      await sleep(500);
      await su.query("SELECT pg_stat_statements_reset()");
      const batchesBefore = relay?.batches() ?? 0;
      const cpuBefore = postgresCpuMs(pgServer.pid);
      const committed = await placeOrders(ordersPool, ordersPerVariant, clients, ratePerSecond, v.outbox);
      if (v.outbox) await allMailed(committed.keys(), mailed);
      // The last batch's outcomes are written after its sends.
      if (v.outbox) {
        for (;;) {
          const r = await su.query("SELECT count(*)::int AS n FROM receipts.receipts WHERE state = 'pending'");
          if (r.rows[0].n === 0) break;
          await sleep(10);
        }
      }
      const cpu = diff(postgresCpuMs(pgServer.pid), cpuBefore);
      const cpuMs = total(cpu);
      const top = await su.query<{ calls: number; ms: number; query: string }>(
        `SELECT calls::int, total_exec_time AS ms, regexp_replace(query, '\\s+', ' ', 'g') AS query FROM pg_stat_statements
          WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY total_exec_time DESC LIMIT 10`,
      );
      const all = await su.query<{ ms: number }>(
        "SELECT sum(total_exec_time) AS ms FROM pg_stat_statements WHERE toplevel AND query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE '%state = $1%'",
      );
      const batches = (relay?.batches() ?? 0) - batchesBefore;
      await relay?.stop();
      const n = ordersPerVariant;
      const line = `${v.name}: PostgreSQL CPU ${(cpuMs / n).toFixed(3)} ms/order, top-level statements ${(all.rows[0]!.ms / n).toFixed(3)} ms/order${v.outbox ? `, ${(n / batches).toFixed(1)} receipts per batch` : ""}`;
      results.push(line);
      console.log(line);
      console.log(`  CPU by process: ${[...cpu].map(([k, ms]) => `${k} ${(ms / n).toFixed(3)}`).join(", ")}`);
      for (const s of top.rows) console.log(`  ${(s.ms / n).toFixed(4)} ms/order  ${(s.calls / n).toFixed(2)} calls/order  ${s.query.slice(0, 150)}`);
      console.log();
      await su.query("TRUNCATE orders.orders");
    }

    const mailed = new Map<string, number>();
    const relay = relayWith(urlAs("receipts"), mailed, shipped.pollIntervalMs);
    try {
      await sleep(500);
      const idleBefore = total(postgresCpuMs(pgServer.pid));
      await sleep(idleSeconds * 1000);
      const idleMs = total(postgresCpuMs(pgServer.pid)) - idleBefore;
      results.push(`idle: PostgreSQL CPU ${(idleMs / idleSeconds).toFixed(1)} ms per second with the relay polling and nothing to send`);
      const calm = await placeOrders(ordersPool, quiet.orders, 1, quiet.ratePerSecond, true);
      await allMailed(calm.keys(), mailed);
      results.push(latencyLine(`quiet (${quiet.ratePerSecond} orders/s)`, calm, mailed));
      const burstCommitted = await placeOrders(ordersPool, burst.orders, burst.clients, undefined, true);
      await allMailed(burstCommitted.keys(), mailed);
      results.push(latencyLine(`burst (${burst.orders} orders, ${burst.clients} clients at once)`, burstCommitted, mailed));
    } finally {
      await relay.stop();
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
