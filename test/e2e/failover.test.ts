// npm test: alone on one core (it asserts what share of an outage's requests is served once the database is back; that backlog needs the chain's CPU within the admission queues' 500 ms, and beside three other test files on 2 cores it does not get it)
/**
 * Failover as a first-class test: the platform under a steady
 * open-loop PlaceOrder load (each logical order with its own customer and
 * Idempotency-Key, asked again with the same key after an uncertain
 * failure), then, in turn:
 *   (a) every platform database connection terminated (pg_terminate_backend)
 *       every 20 ms for 3 s;
 *   (b) PostgreSQL restarted with stop("fast") (-m fast);
 *   (c) PostgreSQL restarted with stop("immediate") (-m immediate);
 *   (d) a service restarted while the database is down: it waits for it,
 *       NOT_SERVING meanwhile, instead of dying;
 *   (e) first of all, every connection slot taken by another client and
 *       the platform's connections ended: PostgreSQL refuses the pools'
 *       new ones (53300), callers get UNAVAILABLE naming the database and
 *       the failed dependency, and orders succeed once slots are free;
 *   (f) PostgreSQL down for 1.5 s under open-loop PlaceOrder and GetOrder
 *       with 3 s deadlines: at least 90 % of the requests sent meanwhile
 *       are served (they wait out the restart within their deadlines), and
 *       every 250 ms window from 1 s after it is served at 95 % or more.
 * For (a)-(c): no service process exits, callers see only retryable codes,
 * every acknowledged order is in the database exactly once (by its key's
 * customer), and orders succeed again within twice the outage after it
 * ended (a ratio, never an absolute time). At the end no log says
 * "uncaught exception".
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname } from "node:path";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import pg from "pg";
import { startEmbeddedPostgres, type EmbeddedPostgres, type StopMode } from "@platform/embedded-postgres";
import { healthV1, ordersV1 } from "@platform/proto";
import { eventually, metricValue, protocols, startTestPlatform, untilStarted, withFreshConnection, type TestPlatform } from "@platform/test-support";
import { OrderLoad, codeName, histogram, reconcile, sleep, type CallRecord, type LogicalOrder } from "../hardening/order-load.js";
import { catalogue } from "../hardening/fuzz-cases.js";

/** Recovery bound: orders succeed again within this multiple of the outage, counted from its end. */
const RECOVERY_RATIO = 2;
/** Failures after which an order may or may not exist: asked again with the same key. */
const uncertain = new Set<CallRecord["code"]>([Code.Unavailable, Code.DeadlineExceeded, Code.ResourceExhausted, Code.Canceled, Code.Internal, Code.Unknown]);
/** What a caller may see while the database is failing over: clear and retryable. */
const outageCodes = new Set<CallRecord["code"]>(["ok", Code.Unavailable, Code.DeadlineExceeded, Code.ResourceExhausted]);

let p: TestPlatform;
/** The PostgreSQL running now: the platform's first, then the ones this test restarts. */
let currentPg: EmbeddedPostgres | undefined;
const restartedPg: EmbeddedPostgres[] = [];
const progress: { at: number; line: string }[] = [];
const summary: string[] = [];

before(async () => {
  p = await startTestPlatform({
    // warn: the loss lines are warn; the request lines stay out of the logs. The breakers
    // as shipped: their first trial 0.5 s after opening, doubling (BREAKER_FIRST_RESET_MS).
    env: { LOG_LEVEL: "warn" },
    onProgress: (line) => progress.push({ at: performance.now(), line }),
  });
  currentPg = p.postgres;
});
after(async () => {
  await p?.stop();
  for (const pg of restartedPg) await pg.stop("fast");
  await p?.close();
  if (summary.length) console.log(summary.join("\n"));
});

/** A fresh superuser connection per use: the database restarts under us. */
const withDb = <T>(fn: (db: pg.Client) => Promise<T>): Promise<T> => withFreshConnection(p.databaseUrl, fn);

/**
 * Open loop: a new logical order every `intervalMs`, whatever happened to
 * the earlier ones (a closed loop would slow down with the platform and
 * hide the outage); each retried with its key after an uncertain failure.
 */
class OpenLoopOrders {
  readonly load: OrderLoad;
  private readonly timer: NodeJS.Timeout;
  private readonly running = new Set<Promise<void>>();
  private n = 0;

  constructor(tag: string, intervalMs: number, timeoutMs: number) {
    this.load = new OrderLoad(p, { tag, workers: 0, timeoutMs });
    this.timer = setInterval(() => this.fire(), intervalMs);
  }

  private fire(): void {
    const i = this.n++;
    const order: LogicalOrder = {
      customerId: `${this.load.tag}-0-${i}`,
      key: `${this.load.tag}-key-0-${i}`,
      items: [{ sku: catalogue[i % catalogue.length]!, quantity: 1 + (i % 3) }],
      protocol: protocols[i % protocols.length]!,
      attempts: 0,
    };
    this.load.orders.push(order);
    const run = (async () => {
      for (let a = 0; a < 3; a++) {
        const code = await this.load.attempt(order);
        if (code === "ok" || !uncertain.has(code)) return;
        await sleep(100 * (a + 1));
      }
    })();
    this.running.add(run);
    void run.finally(() => this.running.delete(run));
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await Promise.all([...this.running]);
  }
}

/** After recovery, asks again (same key, same body) for every order whose outcome stayed unknown, all at once; returns how many. */
async function resolveUncertain(load: OrderLoad): Promise<number> {
  const open = load.orders.filter((o) => o.orderId === undefined);
  await Promise.all(
    open.map(async (order) => {
      for (let a = 0; a < 20 && order.orderId === undefined; a++) {
        const code = await load.attempt(order, 5000);
        if (code !== "ok" && !uncertain.has(code)) return;
        if (code !== "ok") await sleep(250);
      }
    }),
  );
  return open.filter((o) => o.orderId !== undefined).length;
}

/** Waits (bounded by `limitMs`, a guard against hangs) until `n` orders started after `since` succeeded. */
async function successesAfter(load: OrderLoad, since: number, n: number, limitMs: number): Promise<void> {
  const until = performance.now() + limitMs;
  while (load.calls.filter((c) => c.code === "ok" && c.startedAt >= since).length < n && performance.now() < until) await sleep(25);
}

/** Every service of the platform, the receipts worker and the mailer included: a crash anywhere is a failure. */
const everyService = () => Object.keys(p.services) as (keyof TestPlatform["services"])[];

/** A service's log lines at error level or above, the last `n`: what it said before it exited. */
function lastWords(name: keyof TestPlatform["services"], n = 5): string[] {
  return readFileSync(p.services[name].logFile, "utf8")
    .split("\n")
    .filter((l) => /"level":"(error|fatal)"/.test(l))
    .slice(-n);
}

function assertNoServiceExited(what: string): void {
  const exits = progress.filter((e) => / exited /.test(e.line)).map((e) => e.line);
  const exited = everyService().filter((name) => exits.some((l) => l.startsWith(`${name} exited`)));
  assert.deepEqual(exits, [], `${what}: no service process exited${exited.map((name) => `\n${name} said last:\n${lastWords(name).join("\n")}`).join("")}`);
  for (const name of everyService()) {
    assert.equal(p.services[name].process.restarts, 0, `${what}: ${name} was restarted`);
    assert.equal(p.services[name].process.ready, true, `${what}: ${name} is ready`);
  }
}

/**
 * Runs `disrupt` under load and checks the invariants. `disrupt` returns
 * when the outage is over (the terminations stopped, the database accepts
 * connections again).
 */
async function underLoad(tag: string, disrupt: () => Promise<void>): Promise<void> {
  const startedAt = performance.now();
  // 10 new orders a second (plus their retries): steady traffic that a 2-core
  // machine shared with other work still serves with room to spare, so that
  // the recovery measured is the database path's, not a CPU backlog's.
  const open = new OpenLoopOrders(tag, 100, 2000);
  const { load } = open;
  let downAt = 0;
  let upAt = 0;
  try {
    await successesAfter(load, 0, 10, 30_000);
    assert.ok(load.successesSince(0) >= 10, `orders flow before the outage: ${histogram(load.calls)}`);
    downAt = performance.now();
    await disrupt();
    upAt = performance.now();
    // A guard against a hang, wider than the bound asserted below.
    await successesAfter(load, upAt, 10, 4 * RECOVERY_RATIO * (upAt - downAt));
  } finally {
    await open.stop();
  }
  const outageMs = upAt - downAt;
  const firstOk = Math.min(...load.calls.filter((c) => c.code === "ok" && c.startedAt >= upAt).map((c) => c.settledAt));
  const recoveryMs = firstOk - upAt;
  const settledAt = performance.now();
  const resolved = await resolveUncertain(load);
  const resolvedAt = performance.now();
  const acknowledged = load.orders.filter((o) => o.orderId !== undefined).length;
  const rows = await withDb(async (db) =>
    Number((await db.query("SELECT count(*) AS n FROM orders.orders WHERE customer_id LIKE $1", [`${tag}-%`])).rows[0].n),
  );
  const during = load.calls.filter((c) => c.settledAt >= downAt && c.startedAt <= upAt);
  const line =
    `[failover ${tag}] outage ${Math.round(outageMs)} ms; first order started after it ok ${Math.round(recoveryMs)} ms later ` +
    `(${(recoveryMs / outageMs).toFixed(2)} x outage, bound ${RECOVERY_RATIO} x); calls ${histogram(load.calls)}, during the outage ${histogram(during)}; ` +
    `${load.orders.length} logical orders, ${acknowledged} acknowledged (${resolved} by asking again), ${rows} rows; ` +
    `phases: warm-up ${Math.round(downAt - startedAt)} ms, outage ${Math.round(outageMs)} ms, until 10 ok and load stopped ${Math.round(settledAt - upAt)} ms, asking again ${Math.round(resolvedAt - settledAt)} ms`;
  summary.push(line);
  console.log(line);

  assertNoServiceExited(tag);
  assert.deepEqual(
    load.calls.filter((c) => !outageCodes.has(c.code)).map((c) => `${c.protocol} ${codeName(c.code)}: ${c.message}`),
    [],
    "only clear, retryable failures",
  );
  assert.ok(Number.isFinite(recoveryMs), `orders never succeeded after the outage: ${histogram(load.calls)}`);
  assert.ok(recoveryMs <= RECOVERY_RATIO * outageMs, `recovered ${Math.round(recoveryMs)} ms after an outage of ${Math.round(outageMs)} ms`);
  assert.equal(acknowledged, load.orders.length, "every logical order got an answer in the end");
  assert.equal(rows, acknowledged, "one row per acknowledged order");
  assert.deepEqual(await withDb((db) => reconcile(db, load)), []);
  // And by idempotency key: one record per acknowledged key, pointing at the order its caller was given.
  const records = await withDb(
    async (db) =>
      (await db.query<{ key: string; order_id: string }>("SELECT key, order_id FROM orders.idempotency_records WHERE key LIKE $1", [`%${tag}-key-%`])).rows,
  );
  const byKey = new Map<string, string[]>();
  for (const r of records) {
    const key = r.key.slice(r.key.indexOf(`${tag}-key-`));
    byKey.set(key, [...(byKey.get(key) ?? []), r.order_id]);
  }
  const keyProblems = load.orders
    .filter((o) => JSON.stringify(byKey.get(o.key) ?? []) !== JSON.stringify([o.orderId]))
    .map((o) => `${o.key}: acknowledged ${o.orderId}, recorded ${JSON.stringify(byKey.get(o.key) ?? [])}`);
  assert.deepEqual(keyProblems, [], "every acknowledged key recorded exactly once, with its order");
  assert.equal(records.length, acknowledged, "no record for a key nobody was answered for");
  // The receipts worker came through it too: every acknowledged order's receipt is sent
  // (services/receipts/src/relay.spec.ts has the relay alone across an -m immediate restart).
  const orderIds = load.orders.map((o) => o.orderId!);
  const unsent = () =>
    withDb(
      async (db) =>
        (
          await db.query<{ order_id: string; state: string }>(
            "SELECT o.id AS order_id, coalesce(r.state, 'no receipt') AS state FROM unnest($1::uuid[]) AS o(id) LEFT JOIN receipts.receipts r ON r.order_id = o.id WHERE r.state IS DISTINCT FROM 'sent'",
            [orderIds],
          )
        ).rows,
    );
  // A guard against a hang: a receipt that failed during the outage is retried after its backoff, and
  // one claimed by a batch whose outcomes were lost is claimed again once its lease ends (30 s).
  const until = performance.now() + 90_000;
  while ((await unsent()).length > 0 && performance.now() < until) await sleep(250);
  const left = await unsent();
  // What a failure needs to be explained: each receipt's attempts, lease and schedule.
  const jobs = left.length === 0 ? [] : await withDb(async (db) => (await db.query(unsentJobsSql, [left.map((r) => r.order_id)])).rows);
  assert.deepEqual(left, [], `every acknowledged order's receipt sent after the outage; their receipts: ${JSON.stringify(jobs)}`);
}

/** The outbox's rows for some orders: their attempts, lease and schedule. */
const unsentJobsSql = `
  SELECT order_id, state, attempts, leased_until, due_at, last_error, now() AS now
    FROM receipts.receipts
   WHERE order_id = ANY($1::uuid[])`;

async function restartPostgres(mode: StopMode): Promise<void> {
  const current = currentPg;
  assert.ok(current, "the platform runs the embedded database");
  const { dataDir, port } = current;
  await current.stop(mode);
  await sleep(1500);
  currentPg = await startEmbeddedPostgres({ dataDir, port });
  restartedPg.push(currentPg);
}

async function lost(service: "orders" | "pricing", cause: string): Promise<number> {
  return metricValue(await p.metrics(service), "db_connections_lost_total", { cause });
}

/**
 * Connects as a role of its own until PostgreSQL refuses, keeping every
 * connection it got; returns the refusal. Superusers keep their reserved
 * slots (superuser_reserved_connections), so the test's own checks still
 * connect.
 */
async function takeFreeSlots(url: string, held: pg.Client[]): Promise<unknown> {
  for (let i = 0; i < 1000; i++) {
    const c = new pg.Client(url);
    try {
      await c.connect();
      held.push(c);
    } catch (e) {
      return e;
    }
  }
  throw new Error("PostgreSQL took 1,000 more connections: its slots never ran out");
}

describe("connection slots taken by another client", () => {
  // First in the file, so that no breaker has counted the failures of the outages below.
  test("(e) PostgreSQL refuses the platform's new connections (53300): UNAVAILABLE naming the database and the dependency, no service exits, orders succeed once slots are free", async () => {
    const hog = "slot_hog";
    await withDb(async (db) => {
      await db.query(`CREATE ROLE ${hog} LOGIN`);
      await db.query(`GRANT CONNECT ON DATABASE postgres TO ${hog}`);
    });
    const hogUrl = new URL(currentPg!.url);
    hogUrl.username = hog;
    const held: pg.Client[] = [];
    let platformBackends = -1;
    try {
      const refusal = await takeFreeSlots(hogUrl.href, held);
      assert.equal((refusal as { code?: string }).code, "53300", String(refusal));
      // The platform's pools still hold connections: end them, and take the slots they free before
      // the pools can reconnect, until the platform holds none (its workers reconnect on their own).
      for (let round = 0; round < 20 && platformBackends !== 0; round++) {
        await withDb((db) =>
          db.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND usename NOT IN ($1, current_user)",
            [hog],
          ),
        );
        await takeFreeSlots(hogUrl.href, held);
        platformBackends = await withDb(async (db) => {
          const r = await db.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND usename NOT IN ($1, current_user)",
            [hog],
          );
          return r.rows[0]!.n;
        });
      }
      assert.equal(platformBackends, 0, `the platform still holds ${platformBackends} connections beside ${held.length} taken`);

      const client = p.client("connect-json");
      const failure = (e: unknown) => ConnectError.from(e);
      const list = await client.listProducts({}, { timeoutMs: 3000 }).then(() => undefined, failure);
      assert.equal(list?.code, Code.Unavailable, String(list));
      assert.match(list.rawMessage, /^checkout: pricing: pricing-db: database unavailable: too many connections \(53300\)$/);
      assert.equal(list.metadata.get("x-failed-dependency"), "pricing");
      const order = { customerId: "foslots-1", items: [{ sku: catalogue[0]!, quantity: 1 }] };
      const placed = await client.placeOrder(order, { timeoutMs: 3000, headers: { "idempotency-key": "foslots-key-1" } }).then(() => undefined, failure);
      assert.equal(placed?.code, Code.Unavailable, String(placed));
      assert.match(placed.rawMessage, /-db: database unavailable: too many connections \(53300\)$/);
      assert.ok(["pricing", "orders"].includes(placed.metadata.get("x-failed-dependency") ?? ""), String(placed.metadata.get("x-failed-dependency")));
      summary.push(
        `[failover slots] ${held.length} connections taken by ${hog}; ListProducts: ${list.rawMessage}; PlaceOrder: ${placed.rawMessage} (x-failed-dependency: ${placed.metadata.get("x-failed-dependency")})`,
      );
    } finally {
      await Promise.all(held.map((c) => c.end()));
    }
    // Slots free again: the same order, asked again with its key, is placed once.
    const client = p.client("connect-json");
    let orderId: string | undefined;
    await eventually(
      async () => {
        const res = await client
          .placeOrder(
            { customerId: "foslots-1", items: [{ sku: catalogue[0]!, quantity: 1 }] },
            { timeoutMs: 3000, headers: { "idempotency-key": "foslots-key-1" } },
          )
          .catch(() => undefined);
        orderId = res?.order?.id;
        return orderId !== undefined;
      },
      "an order placed once the slots are free",
      100,
      100,
    );
    const rows = await withDb((db) => db.query("SELECT id FROM orders.orders WHERE customer_id = $1", ["foslots-1"]));
    assert.deepEqual(
      rows.rows.map((r: { id: string }) => r.id),
      [orderId],
    );
    assertNoServiceExited("slots taken");
  });
});

describe("database failover under steady load", () => {
  test("(a) every platform connection terminated every 20 ms for 3 s", async () => {
    const lostBefore = (await lost("orders", "terminated_by_server")) + (await lost("pricing", "terminated_by_server"));
    let terminated = 0;
    await underLoad("fokill", async () => {
      const admin = new pg.Client({ connectionString: p.databaseUrl });
      admin.on("error", () => {});
      await admin.connect();
      try {
        const until = performance.now() + 3000;
        while (performance.now() < until) {
          const { rows } = await admin.query<{ n: string }>(
            `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) AS n FROM pg_stat_activity
              WHERE pid <> pg_backend_pid() AND (usename IN ('orders', 'pricing') OR application_name IN ('orders', 'pricing'))`,
          );
          terminated += Number(rows[0]!.n);
          await sleep(20);
        }
      } finally {
        await admin.end();
      }
    });
    const lostAfter = (await lost("orders", "terminated_by_server")) + (await lost("pricing", "terminated_by_server"));
    summary.push(`[failover fokill] ${terminated} backends terminated; db_connections_lost_total{cause="terminated_by_server"} +${lostAfter - lostBefore}`);
    assert.ok(terminated > 0, "the loop terminated connections");
    assert.ok(lostAfter > lostBefore, "the services counted the lost connections");
    assert.ok(lostAfter - lostBefore <= terminated, "at most one loss per terminated backend");
  });

  for (const mode of ["fast", "immediate"] as StopMode[]) {
    test(`(${mode === "fast" ? "b" : "c"}) PostgreSQL restarted with -m ${mode}`, async () => {
      await underLoad(`fo${mode}`, () => restartPostgres(mode));
    });
  }
});

describe("a short failover is waited out, not failed through", () => {
  test("(f) PostgreSQL down for 1.5 s under open-loop PlaceOrder and GetOrder with 3 s deadlines: the requests sent meanwhile are served, and every window is served again soon after", async () => {
    const client = p.client("grpc");
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await client.placeOrder(
        { customerId: `foshort-seed-${i}`, items: [{ sku: catalogue[i % catalogue.length]!, quantity: 1 }] },
        { timeoutMs: 5000 },
      );
      ids.push(res.order!.id);
    }
    /** One request per method every 50 ms (20 a second each), one try each: what the caller saw is the platform's own answer. */
    const calls: { method: string; startedAt: number; settledAt: number; ok: boolean; message: string }[] = [];
    const running = new Set<Promise<void>>();
    const acknowledged = new Map<string, string>();
    const record = (method: string, call: () => Promise<unknown>) => {
      const startedAt = performance.now();
      const run = call().then(
        () => void calls.push({ method, startedAt, settledAt: performance.now(), ok: true, message: "" }),
        (e: unknown) => void calls.push({ method, startedAt, settledAt: performance.now(), ok: false, message: ConnectError.from(e).message }),
      );
      running.add(run);
      void run.finally(() => running.delete(run));
    };
    let n = 0;
    const timer = setInterval(() => {
      const i = n++;
      const key = `foshort-key-${i}`;
      record("PlaceOrder", async () => {
        const res = await p
          .client(protocols[i % protocols.length]!)
          .placeOrder(
            { customerId: `foshort-${i}`, items: [{ sku: catalogue[i % catalogue.length]!, quantity: 1 }] },
            { headers: { "Idempotency-Key": key }, timeoutMs: 3000 },
          );
        acknowledged.set(`foshort-${i}`, res.order!.id);
      });
      record("GetOrder", () => p.client(protocols[(i + 1) % protocols.length]!).getOrder({ orderId: ids[i % ids.length]! }, { timeoutMs: 3000 }));
    }, 50);
    let downAt = 0;
    let upAt = 0;
    try {
      await sleep(1500);
      const current = currentPg!;
      const { dataDir, port } = current;
      downAt = performance.now();
      await current.stop("fast");
      await sleep(1500);
      currentPg = await startEmbeddedPostgres({ dataDir, port });
      restartedPg.push(currentPg);
      upAt = performance.now(); // accepting connections
      await sleep(3000);
    } finally {
      clearInterval(timer);
      await Promise.all([...running]);
    }
    // Where the platform refused (admission sheds, per service), for the summary line.
    const shedBy: Record<string, number> = {};
    for (const service of ["gateway", "checkout", "orders", "pricing"] as const) {
      const text = await p.metrics(service);
      shedBy[service] = ["queue_timeout", "queue_full", "intake"].reduce((n, reason) => n + metricValue(text, "admission_shed_total", { reason }), 0);
    }
    const sentWhileDown = calls.filter((c) => c.startedAt >= downAt && c.startedAt < upAt);
    const served = sentWhileDown.filter((c) => c.ok).length;
    const failures = [...new Set(sentWhileDown.filter((c) => !c.ok).map((c) => `${c.method}: ${c.message}`))];
    // Windows of 250 ms by send time, from 1 s after the database accepted connections again.
    const windows: string[] = [];
    for (let from = upAt + 1000; from + 250 <= upAt + 3000; from += 250) {
      const inWindow = calls.filter((c) => c.startedAt >= from && c.startedAt < from + 250);
      const ok = inWindow.filter((c) => c.ok).length;
      if (ok < 0.95 * inWindow.length) windows.push(`${Math.round(from - upAt)} ms after: ${ok} of ${inWindow.length}`);
    }
    summary.push(
      `[failover short] down ${Math.round(upAt - downAt)} ms; sent while down ${sentWhileDown.length}, served ${served} (${Math.round((100 * served) / Math.max(1, sentWhileDown.length))} %); ` +
        `admission sheds so far by service ${JSON.stringify(shedBy)}; failures ${JSON.stringify(failures)}; windows under 95 % from 1 s after: ${JSON.stringify(windows)}`,
    );
    assert.ok(sentWhileDown.length >= 40, `the load ran while the database was down: ${sentWhileDown.length} requests`);
    assert.ok(
      served >= 0.9 * sentWhileDown.length,
      `served ${served} of ${sentWhileDown.length} requests sent while the database was down (${Math.round(upAt - downAt)} ms); admission sheds by service ${JSON.stringify(shedBy)}; failures: ${failures.join("; ")}`,
    );
    assert.deepEqual(windows, [], "every 250 ms window from 1 s after the database is back is served at 95 % or more");
    // No acknowledged order is lost, and none is stored twice.
    const rows = await withDb(
      async (db) =>
        (
          await db.query<{ customer_id: string; id: string }>(
            "SELECT customer_id, id FROM orders.orders WHERE customer_id LIKE 'foshort-%' AND customer_id NOT LIKE 'foshort-seed-%'",
          )
        ).rows,
    );
    const stored = new Map<string, string[]>();
    for (const r of rows) stored.set(r.customer_id, [...(stored.get(r.customer_id) ?? []), r.id]);
    const lostOrDoubled = [...acknowledged].filter(([customer, id]) => JSON.stringify(stored.get(customer)) !== JSON.stringify([id]));
    assert.deepEqual(lostOrDoubled, [], "every acknowledged order stored exactly once");
    assert.ok(
      [...stored.values()].every((ids) => ids.length === 1),
      "no order stored twice",
    );
  });
});

describe("start-up while the database is down", () => {
  test("(d) a service restarted meanwhile listens NOT_SERVING, answers UNAVAILABLE 'starting', and serves once the database is back", async () => {
    const orders = p.services.orders;
    const health = createClient(healthV1.Health, createGrpcTransport({ baseUrl: orders.url }));
    const direct = createClient(ordersV1.OrdersService, createGrpcTransport({ baseUrl: orders.url }));
    const current = currentPg!;
    const { dataDir, port } = current;
    await current.stop("fast");
    orders.process.kill("SIGKILL");
    // The supervisor restarts it (first backoff 500 ms); it listens before it can reach the database.
    let readyz = 0;
    await untilStarted(
      async () =>
        (readyz = await fetch(`${orders.adminUrl}/readyz`).then(
          (r) => r.status,
          () => 0,
        )) === 503,
      "the restarted orders listening",
    ).catch(() => {}); // asserted below, with what /readyz said
    assert.equal(readyz, 503, "/readyz says not ready while the database is down");
    assert.equal(orders.process.ready, false, "the supervisor does not count it as ready");
    const check = await health.check({ service: "" }, { timeoutMs: 2000 });
    assert.equal(check.status, healthV1.HealthCheckResponse_ServingStatus.NOT_SERVING);
    const refused = await direct.getOrder({ orderId: "00000000-0000-0000-0000-000000000000" }, { timeoutMs: 2000 }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    assert.equal(refused?.code, Code.Unavailable, String(refused));
    assert.equal(refused?.rawMessage, "starting: waiting for the database and the receipts queue");

    const downFor = performance.now();
    currentPg = await startEmbeddedPostgres({ dataDir, port });
    restartedPg.push(currentPg);
    await orders.process.whenReady(60_000);
    const readyAfter = performance.now() - downFor;
    assert.equal(await fetch(`${orders.adminUrl}/readyz`).then((r) => r.status), 200);
    assert.equal((await health.check({ service: "" })).status, healthV1.HealthCheckResponse_ServingStatus.SERVING);
    const res = await p.client("connect-json").placeOrder({ customerId: "fostartup-1", items: [{ sku: catalogue[0]!, quantity: 1 }] }, { timeoutMs: 5000 });
    assert.ok(res.order?.id);
    const waits = readFileSync(orders.logFile, "utf8")
      .split("\n")
      // Start-up's retries, or the pool's wait for a server that refuses connections (reconnect-gate.ts).
      .filter(
        (l) =>
          l.includes('"msg":"waiting for the database"') || l.includes('"msg":"database refuses connections; requests wait for it within their deadlines"'),
      ).length;
    summary.push(
      `[failover startup] orders restarted while the database was down: ${waits} waits logged, ready ${Math.round(readyAfter)} ms after the database was back`,
    );
    assert.ok(waits > 0, "the restarted service logged its wait for the database");
    assert.equal(orders.process.restarts, 1, "one restart: the kill");
    for (const name of ["pricing", "checkout", "gateway"] as const) assert.equal(p.services[name].process.restarts, 0, `${name} did not exit`);
  });
});

test("no service logged an uncaught exception", () => {
  summary.push(`[failover] service logs in ${dirname(p.services.orders.logFile)} (kept with KEEP_TEST_DATA=1)`);
  for (const name of everyService()) {
    const text = readFileSync(p.services[name].logFile, "utf8");
    assert.equal(text.split("\n").filter((l) => l.includes("uncaught exception")).length, 0, `${name}: ${p.services[name].logFile}`);
  }
});
