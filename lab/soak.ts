/**
 * `npm run soak [-- --minutes N]`: a bounded soak of the whole platform.
 *
 * 1. Starts embedded PostgreSQL and the four services (fresh data dir).
 * 2. Measures capacity: a short closed-loop run (every worker sends its next
 *    request as soon as the last one is answered), successes per second.
 * 3. Soaks: an open-loop constant rate (requests start on a clock, whatever
 *    the answers do) at --load (default 75%) of that capacity for --minutes
 *    (default 3), mixed like real traffic (browse, order, read back) over all
 *    four protocols.
 * 4. Every --sample-s seconds (default 3) reads each service's /metrics:
 *    process_resident_memory_bytes, nodejs_heap_size_used_bytes,
 *    nodejs_active_handles_total.
 * 5. Reports, per service and metric, the level in the first third of the
 *    soak against the last third, and the linear-trend slope per minute over
 *    all samples; the requests by outcome and latency; and checks that the
 *    database holds exactly the acknowledged orders, once each.
 *
 * Exit status 1 when any request failed, a service restarted, the database
 * disagrees, or a metric grew beyond its tolerance (see `tolerance`, printed
 * with each verdict); 0 otherwise. Not part of `npm test`. `--json FILE`
 * writes every sample for a closer look.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import pg from "pg";
import { startPlatform, type Platform } from "@platform/launcher";
import { chainManifests, chainServices as serviceNames, type ChainService as ServiceName } from "./chain.js";
import { checkoutV1 } from "@platform/proto";
import { protocols, transportFor as transport } from "@platform/test-support";

const { values: args } = parseArgs({
  options: {
    minutes: { type: "string", default: "3" },
    load: { type: "string", default: "0.75" },
    "capacity-s": { type: "string", default: "20" },
    "sample-s": { type: "string", default: "3" },
    workers: { type: "string", default: "24" },
    "keep-data": { type: "boolean", default: false },
    json: { type: "string" },
  },
});
const minutes = Number(args.minutes);
const loadFraction = Number(args.load);
const capacitySeconds = Number(args["capacity-s"]);
const sampleSeconds = Number(args["sample-s"]);
const closedLoopWorkers = Number(args.workers);
if (!(minutes > 0) || !(loadFraction > 0 && loadFraction <= 0.8) || !(capacitySeconds > 0) || !(sampleSeconds > 0) || !(closedLoopWorkers > 0)) {
  console.error(
    "usage: npm run soak -- [--minutes N (> 0)] [--load F (0 < F <= 0.8)] [--capacity-s S] [--sample-s S] [--workers W] [--keep-data] [--json FILE]",
  );
  process.exit(2);
}

/**
 * What counts as growth. Memory saw-tooths with garbage collection, so the
 * verdicts compare levels, not single samples: the first third of the soak
 * against the last third. For the heap, the floor of each third (its lowest
 * sample: what survives a collection); for RSS too, with room for the
 * allocator's warm-up; for handles, the median.
 */
const tolerance = {
  /**
   * Heap: exceeded when the floor grew by more than this per minute between
   * the thirds (and by more than `heapMinBytes` in all) AND the linear trend
   * over all samples agrees (> `heapTrendBytesPerMin`): young-generation
   * collections make a single floor noisy, a leak moves both.
   */
  heapBytesPerMin: 3 * 1024 * 1024,
  heapMinBytes: 8 * 1024 * 1024,
  heapTrendBytesPerMin: 2 * 1024 * 1024,
  /** RSS floor of the last third at most start x 1.25 + 32 MiB. */
  rssFactor: 1.25,
  rssExtraBytes: 32 * 1024 * 1024,
  /** Median open handles may grow by this many. */
  handles: 10,
};
const requestTimeoutMs = 5000;
const metricNames = ["process_resident_memory_bytes", "nodejs_heap_size_used_bytes", "nodejs_active_handles_total"] as const;
type MetricName = (typeof metricNames)[number];
const skus = ["MUG-CERAMIC", "COFFEE-BEANS-1KG", "FILTER-PAPER-100", "GRINDER-BURR", "KETTLE-GOOSENECK"];

// ------------------------------------------------------------------ traffic

interface Outcome {
  ok: boolean;
  code: string;
  ms: number;
}

class Traffic {
  private readonly clients: Client<typeof checkoutV1.CheckoutService>[];
  private seq = 0;
  /** Ids of orders placed and acknowledged, to read back and to reconcile. */
  readonly placed: string[] = [];
  readonly outcomes: Outcome[] = [];
  readonly failures = new Map<string, { count: number; example: string }>();
  /** PlaceOrder calls that failed (in any phase): each may or may not have stored its order. */
  unansweredOrders = 0;

  constructor(gatewayUrl: string) {
    this.clients = protocols.map((p) => createClient(checkoutV1.CheckoutService, transport(gatewayUrl, p)));
  }

  /** One request of the mix: 60% list products, 30% place an order, 10% read one back. */
  async one(record: boolean): Promise<Outcome> {
    const n = this.seq++;
    const client = this.clients[n % this.clients.length]!;
    const kind = n % 10;
    const started = performance.now();
    let outcome: Outcome;
    try {
      if (kind < 6) {
        const { products } = await client.listProducts({}, { timeoutMs: requestTimeoutMs });
        if (products.length === 0) throw new ConnectError("empty catalogue", Code.Internal);
      } else if (kind < 9 || this.placed.length === 0) {
        const customerId = `soak-${n}`;
        const { order } = await client.placeOrder(
          { customerId, items: [{ sku: skus[n % skus.length]!, quantity: 1 + (n % 3) }] },
          { timeoutMs: requestTimeoutMs, headers: { "Idempotency-Key": `soak-key-${n}` } },
        );
        if (!order?.id || order.customerId !== customerId) throw new ConnectError("placeOrder answered without the order", Code.Internal);
        this.placed.push(order.id);
      } else {
        const orderId = this.placed[n % this.placed.length]!;
        const { order } = await client.getOrder({ orderId }, { timeoutMs: requestTimeoutMs });
        if (order?.id !== orderId) throw new ConnectError("getOrder answered another order", Code.Internal);
      }
      outcome = { ok: true, code: "ok", ms: performance.now() - started };
    } catch (e) {
      const err = ConnectError.from(e);
      outcome = { ok: false, code: Code[err.code], ms: performance.now() - started };
      if (kind >= 6 && kind < 9) this.unansweredOrders++;
      if (record) {
        const f = this.failures.get(outcome.code) ?? { count: 0, example: err.rawMessage };
        f.count++;
        this.failures.set(outcome.code, f);
      }
    }
    if (record) this.outcomes.push(outcome);
    return outcome;
  }
}

/** Closed loop: `workers` requests in flight all the time, for `seconds`; successes per second. */
async function measureCapacity(traffic: Traffic, workers: number, seconds: number): Promise<number> {
  const warmUpUntil = performance.now() + 3000;
  const until = warmUpUntil + seconds * 1000;
  let ok = 0;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (performance.now() < until) {
        const o = await traffic.one(false);
        if (o.ok && performance.now() > warmUpUntil) ok++;
      }
    }),
  );
  return ok / seconds;
}

/** Open loop: starts `rate` requests per second on a clock for `seconds`, whatever the answers do. */
async function openLoop(traffic: Traffic, rate: number, seconds: number, onTick: () => void): Promise<{ sent: number; skipped: number }> {
  const started = performance.now();
  const end = started + seconds * 1000;
  const maxInFlight = Math.ceil(rate * (requestTimeoutMs / 1000) * 2);
  const inFlight = new Set<Promise<unknown>>();
  let sent = 0;
  let skipped = 0;
  while (performance.now() < end) {
    const due = Math.floor(((performance.now() - started) / 1000) * rate);
    while (sent + skipped < due) {
      if (inFlight.size >= maxInFlight) {
        skipped++; // the client could not keep up: counted as a failure
        continue;
      }
      sent++;
      const p: Promise<unknown> = traffic.one(true).finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
    onTick();
    await new Promise((r) => setTimeout(r, 5));
  }
  await Promise.all(inFlight);
  return { sent, skipped };
}

// ------------------------------------------------------------------ metrics

interface Sample {
  atMin: number;
  values: Record<ServiceName, Partial<Record<MetricName, number>>>;
}

async function sample(platform: Platform, t0: number): Promise<Sample> {
  const values = {} as Sample["values"];
  await Promise.all(
    serviceNames.map(async (s) => {
      values[s] = {};
      try {
        const text = await (await fetch(`${platform.services[s].adminUrl}/metrics`, { signal: AbortSignal.timeout(3000) })).text();
        for (const line of text.split("\n")) {
          const [name, value] = line.split(" ");
          if (metricNames.includes(name as MetricName)) values[s][name as MetricName] = Number(value);
        }
      } catch {
        // a missing sample shows as a gap
      }
    }),
  );
  return { atMin: (performance.now() - t0) / 60_000, values };
}

/** Least-squares slope of y over x. */
function slope(points: [number, number][]): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((s, p) => s + p[0], 0) / n;
  const my = points.reduce((s, p) => s + p[1], 0) / n;
  const num = points.reduce((s, p) => s + (p[0] - mx) * (p[1] - my), 0);
  const den = points.reduce((s, p) => s + (p[0] - mx) ** 2, 0);
  return den === 0 ? 0 : num / den;
}

function median(values: number[]): number {
  return quantile(
    [...values].sort((a, b) => a - b),
    0.5,
  );
}

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

const mib = (b: number) => `${(b / 1024 / 1024).toFixed(1)} MiB`;

// ------------------------------------------------------------------ main

const dataDir = mkdtempSync(join(tmpdir(), "soak-"));
chmodSync(dataDir, 0o755);
console.log(`soak: ${minutes} min at ${Math.round(loadFraction * 100)}% of measured capacity; data in ${dataDir}`);
const platform = await startPlatform({
  dataDir,
  manifests: chainManifests(),
  freePorts: true,
  env: { LOG_LEVEL: "warn" },
  onProgress: (l) => console.log(`  ${l}`),
});
let exitCode = 0;
try {
  const traffic = new Traffic(platform.gatewayUrl);
  console.log(`capacity: closed loop, ${closedLoopWorkers} workers, ${capacitySeconds} s after a 3 s warm-up...`);
  const capacity = await measureCapacity(traffic, closedLoopWorkers, capacitySeconds);
  const rate = Math.max(1, Math.floor(capacity * loadFraction));
  console.log(`capacity ≈ ${capacity.toFixed(0)} req/s; soaking at ${rate} req/s (open loop) for ${minutes} min, sampling every ${sampleSeconds} s`);

  const t0 = performance.now();
  const samples: Sample[] = [await sample(platform, t0)];
  let nextSample = t0 + sampleSeconds * 1000;
  let sampling: Promise<void> = Promise.resolve();
  let lastProgress = t0;
  const { sent, skipped } = await openLoop(traffic, rate, minutes * 60, () => {
    const now = performance.now();
    if (now >= nextSample) {
      nextSample += sampleSeconds * 1000;
      sampling = sampling.then(async () => void samples.push(await sample(platform, t0)));
    }
    if (now - lastProgress >= 30_000) {
      lastProgress = now;
      const failed = traffic.outcomes.filter((o) => !o.ok).length;
      console.log(`  ${((now - t0) / 60_000).toFixed(1)} min: ${traffic.outcomes.length} answered, ${failed} failed`);
    }
  });
  await sampling;
  samples.push(await sample(platform, t0));

  // Requests.
  const ok = traffic.outcomes.filter((o) => o.ok);
  const failed = traffic.outcomes.length - ok.length + skipped;
  const latencies = ok.map((o) => o.ms).sort((a, b) => a - b);
  console.log(`\nrequests: ${sent} sent at ${rate}/s (${skipped} not sent: client backlog), ${ok.length} ok, ${failed} failed`);
  console.log(
    `latency of successes: p50 ${quantile(latencies, 0.5).toFixed(1)} ms, p99 ${quantile(latencies, 0.99).toFixed(1)} ms, max ${quantile(latencies, 1).toFixed(1)} ms`,
  );
  for (const [code, f] of traffic.failures) console.log(`  ${code}: ${f.count} (e.g. ${f.example})`);
  if (failed > 0) exitCode = 1;

  // Trends.
  const verdicts: string[] = [];
  const soakMin = samples[samples.length - 1]!.atMin;
  console.log(
    `\n${"service".padEnd(9)} ${"metric".padEnd(30)} ${"first third".padStart(12)} ${"last third".padStart(12)} ${"trend/min".padStart(11)}  verdict (limit)`,
  );
  for (const s of serviceNames) {
    for (const m of metricNames) {
      const points = samples.flatMap((x): [number, number][] => (x.values[s][m] === undefined ? [] : [[x.atMin, x.values[s][m]!]]));
      const first = points.filter(([t]) => t <= soakMin / 3).map(([, v]) => v);
      const last = points.filter(([t]) => t >= (2 * soakMin) / 3).map(([, v]) => v);
      if (first.length === 0 || last.length === 0) {
        verdicts.push(`${s} ${m}: too few samples (${points.length})`);
        continue;
      }
      // Raw linear trend over every sample, for the record.
      const k = slope(points);
      const bytes = m !== "nodejs_active_handles_total";
      const fmt = (v: number) => (bytes ? mib(v) : String(Math.round(v)));
      let from: number;
      let to: number;
      let limit: number;
      if (m === "nodejs_heap_size_used_bytes") {
        [from, to] = [Math.min(...first), Math.min(...last)];
        limit = from + Math.max(tolerance.heapMinBytes, tolerance.heapBytesPerMin * ((2 * soakMin) / 3));
      } else if (m === "process_resident_memory_bytes") {
        [from, to] = [Math.min(...first), Math.min(...last)];
        limit = from * tolerance.rssFactor + tolerance.rssExtraBytes;
      } else {
        [from, to] = [median(first), median(last)];
        limit = from + tolerance.handles;
      }
      const over = to > limit && (m !== "nodejs_heap_size_used_bytes" || k > tolerance.heapTrendBytesPerMin);
      const what = m === "nodejs_active_handles_total" ? "median" : "floor";
      const rule = `${what} ≤ ${fmt(limit)}${m === "nodejs_heap_size_used_bytes" ? ` or trend ≤ ${mib(tolerance.heapTrendBytesPerMin)}/min` : ""}`;
      console.log(
        `${s.padEnd(9)} ${m.padEnd(30)} ${fmt(from).padStart(12)} ${fmt(to).padStart(12)} ${(bytes ? mib(k) : k.toFixed(2)).padStart(11)}  ${over ? "EXCEEDED" : "ok"} (${rule})`,
      );
      if (over) verdicts.push(`${s} ${m}: ${what} ${fmt(from)} -> ${fmt(to)} (limit ${fmt(limit)}; trend ${bytes ? mib(k) : k.toFixed(2)}/min)`);
    }
  }

  // Processes and database.
  for (const s of serviceNames) {
    const proc = platform.services[s].process;
    if (proc.restarts > 0 || !proc.ready) verdicts.push(`${s} restarted ${proc.restarts} times (ready: ${proc.ready})`);
  }
  const db = new pg.Client({ connectionString: platform.databaseUrl });
  await db.connect();
  try {
    const rows = (
      await db.query<{ n: string; customers: string }>(
        "SELECT count(*) AS n, count(DISTINCT customer_id) AS customers FROM orders.orders WHERE customer_id LIKE 'soak-%'",
      )
    ).rows[0]!;
    // Every customer id is used by one logical order: acknowledged ones must be there, once;
    // one whose call failed (capacity phase included) may or may not be.
    const acknowledged = new Set(traffic.placed).size;
    const stored = Number(rows.n);
    console.log(`\ndatabase: ${stored} soak orders for ${rows.customers} customers; ${acknowledged} acknowledged, ${traffic.unansweredOrders} unanswered`);
    if (stored !== Number(rows.customers)) verdicts.push(`duplicate orders: ${stored} rows for ${rows.customers} customers`);
    const found = Number(
      (await db.query<{ n: string }>("SELECT count(*) AS n FROM orders.orders WHERE id = ANY($1::uuid[])", [[...new Set(traffic.placed)]])).rows[0]!.n,
    );
    if (found < acknowledged) verdicts.push(`${acknowledged - found} acknowledged orders are missing`);
    if (stored > acknowledged + traffic.unansweredOrders) verdicts.push(`${stored - acknowledged} stored orders were never acknowledged`);
  } finally {
    await db.end();
  }

  if (args.json) {
    writeFileSync(
      args.json,
      JSON.stringify(
        { minutes, capacity, rate, sent, skipped, ok: ok.length, failed, failures: Object.fromEntries(traffic.failures), tolerance, samples, verdicts },
        null,
        1,
      ),
    );
    console.log(`samples written to ${args.json}`);
  }
  if (verdicts.length > 0) exitCode = 1;
  console.log(exitCode === 0 ? "\nsoak: PASS" : `\nsoak: FAIL\n  ${[...(failed > 0 ? [`${failed} requests failed`] : []), ...verdicts].join("\n  ")}`);
} catch (e) {
  console.error(e);
  exitCode = 1;
} finally {
  await platform.stop();
  if (!args["keep-data"]) rmSync(dataDir, { recursive: true, force: true });
}
process.exit(exitCode);
