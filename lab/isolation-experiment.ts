/**
 * `npm run experiment:isolation [-- slowdown|capacity] [--place N] [--seconds S]`
 *
 * slowdown (the default): the isolation issue's experiment on the platform
 * exactly as shipped (no bulkhead or breaker settings). Pricing's table is
 * locked by a real PostgreSQL lock (BEGIN; LOCK TABLE pricing.products IN
 * ACCESS EXCLUSIVE MODE), so every pricing statement waits. Meanwhile
 * PlaceOrders arrive (they need pricing) and GetOrders run closed-loop (they
 * never need it). Prints, per second, the fast method's goodput, what
 * happened to PlaceOrder, and every hop's limits, in-use and queue as the
 * adaptive controller moved them; then the limits it settled on.
 *
 * capacity: each hop's measured capacity for docs/isolation.md. Closed-loop
 * load at increasing concurrency, the default request mix; per hop and
 * method class: throughput X, mean service time W (rpc_server_duration) and
 * the concurrency they imply by Little's law (N = X x W), next to the limits
 * the adaptive controller settled on.
 */
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { Code, ConnectError } from "@connectrpc/connect";
import pg from "pg";
import { runLoad } from "./load/run-load.js";
import { startTestPlatform, type TestPlatform } from "@platform/test-support";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { place: { type: "string" }, seconds: { type: "string" }, deadline: { type: "string" } },
});
const mode = positionals[0] ?? "slowdown";

/** Every sample of `name` in a Prometheus text, with its labels. */
function samples(text: string, name: string): { labels: Record<string, string>; value: number }[] {
  const out: { labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const labels = Object.fromEntries([...(m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1]!, x[2]!]));
    out.push({ labels, value: Number(m[3]) });
  }
  return out;
}

/** bulkhead_{limit,in_use,queued} per caller -> dependency/class, as "limit/in-use/queued". */
async function isolationState(p: TestPlatform): Promise<Record<string, { limit: number; inUse: number; queued: number }>> {
  const out: Record<string, { limit: number; inUse: number; queued: number }> = {};
  for (const service of ["gateway", "checkout", "orders"] as const) {
    const text = await p.metrics(service);
    for (const s of samples(text, "bulkhead_limit")) {
      const key = `${service}->${s.labels["dependency"]}/${s.labels["class"]}`;
      const find = (n: string) =>
        samples(text, n).find((x) => x.labels["dependency"] === s.labels["dependency"] && x.labels["class"] === s.labels["class"])?.value ?? 0;
      out[key] = { limit: s.value, inUse: find("bulkhead_in_use"), queued: find("bulkhead_queued") };
    }
  }
  return out;
}

async function slowdown() {
  const placeCount = Number(values.place ?? 60);
  const deadlineMs = Number(values.deadline ?? 3000);
  const p = await startTestPlatform({ env: { LOG_LEVEL: "warn" } });
  const locker = new pg.Client({ connectionString: p.databaseUrl });
  try {
    await locker.connect();
    const client = p.client("grpc");
    // A running system has history: some normal traffic first.
    const ids: string[] = [];
    for (let i = 0; i < 60; i++) {
      const { order } = await client.placeOrder({ customerId: `exp-warm-${i}`, items: [{ sku: "MUG-CERAMIC", quantity: 1 }] });
      ids.push(order!.id);
      await client.getOrder({ orderId: order!.id });
    }
    // The fast method's goodput without the slowdown, by the same 4 readers.
    let baseline = 0;
    const until = performance.now() + 3000;
    await Promise.all(
      Array.from({ length: 4 }, async (_, r) => {
        for (let i = r; performance.now() < until; i++) {
          await client.getOrder({ orderId: ids[i % ids.length]! }, { timeoutMs: deadlineMs });
          baseline++;
        }
      }),
    );
    console.log(`before the slowdown: GetOrder ${(baseline / 3).toFixed(0)}/s; limit/in-use/queued:`, fmtState(await isolationState(p)));

    await locker.query("BEGIN");
    await locker.query("LOCK TABLE pricing.products IN ACCESS EXCLUSIVE MODE");
    const lockedAt = performance.now();
    const lockSeconds = Number(values.seconds ?? 12);
    let stop = false;

    // The fast method: 4 closed-loop readers for the whole slowdown.
    const gets = { ok: 0, failed: 0, perSecond: [] as number[] };
    const readers = Array.from({ length: 4 }, async (_, r) => {
      for (let i = r; !stop; i++) {
        try {
          await client.getOrder({ orderId: ids[i % ids.length]! }, { timeoutMs: deadlineMs });
          gets.ok++;
          const sec = Math.floor((performance.now() - lockedAt) / 1000);
          gets.perSecond[sec] = (gets.perSecond[sec] ?? 0) + 1;
        } catch {
          gets.failed++;
        }
      }
    });
    // The slow method: PlaceOrders spread over the first half of the slowdown.
    const spacing = (lockSeconds * 500) / placeCount;
    const places = Array.from({ length: placeCount }, async (_, i) => {
      await new Promise((r) => setTimeout(r, i * spacing));
      const started = performance.now();
      try {
        await client.placeOrder({ customerId: `exp-slow-${randomUUID()}`, items: [{ sku: "MUG-CERAMIC", quantity: 1 }] }, { timeoutMs: deadlineMs });
        return { ms: performance.now() - started, code: "ok", pushback: false };
      } catch (e) {
        const err = ConnectError.from(e);
        return {
          ms: performance.now() - started,
          code: Code[err.code] ?? "?",
          pushback: err.metadata.has("grpc-retry-pushback-ms") || err.metadata.has("retry-after"),
        };
      }
    });
    const peaks: Record<string, number> = {};
    for (let s = 1; s <= lockSeconds; s++) {
      await new Promise((r) => setTimeout(r, 1000));
      const state = await isolationState(p);
      for (const [k, v] of Object.entries(state)) peaks[k] = Math.max(peaks[k] ?? 0, v.inUse);
      console.log(`t=${String(s).padStart(2)}s GetOrder ok ${String(gets.perSecond[s - 1] ?? 0).padStart(4)}/s  ${fmtState(state)}`);
    }
    const settled = await isolationState(p);
    await locker.query("ROLLBACK");
    stop = true;
    await Promise.all(readers);
    const placed = await Promise.all(places);
    const refused = placed.filter((x) => x.code === "Unavailable");
    const waited = placed.filter((x) => x.code === "DeadlineExceeded");
    const ms = refused.map((x) => x.ms).sort((a, b) => a - b);
    const q = (f: number) => ms[Math.min(ms.length - 1, Math.floor(f * ms.length))] ?? Number.NaN;
    const codes: Record<string, number> = {};
    for (const x of placed) codes[x.code] = (codes[x.code] ?? 0) + 1;
    console.log("\nlimits the adaptive controller settled on (limit/in-use/queued):", fmtState(settled));
    console.log("peak in-use during the slowdown:", JSON.stringify(peaks));
    console.log(
      `GetOrder (never needs pricing): ${gets.ok} ok, ${gets.failed} failed; ${(gets.ok / lockSeconds).toFixed(0)}/s during the slowdown vs ${(baseline / 3).toFixed(0)}/s before\n` +
        `PlaceOrder (needs pricing), deadline ${deadlineMs} ms: ${JSON.stringify(codes)}; ${waited.length} got one of pricing's slots and waited for the lock; ` +
        `${refused.length} refused: p50 ${q(0.5).toFixed(0)} ms (${(q(0.5) / deadlineMs).toFixed(3)} x deadline), p90 ${q(0.9).toFixed(0)} ms (${(q(0.9) / deadlineMs).toFixed(3)} x), ` +
        `${refused.filter((x) => x.pushback).length} of them with a pushback hint`,
    );
    const breakers = [];
    for (const service of ["gateway", "checkout", "orders"] as const) {
      for (const s of samples(await p.metrics(service), "circuit_breaker_state"))
        if (s.value > 0) breakers.push(`${service}->${s.labels["dependency"]}.${s.labels["method"]}=${s.value}`);
    }
    console.log(`breakers not closed at the end: ${breakers.join(" ") || "none"}`);
  } finally {
    await locker.end().catch(() => {});
    await p.close();
  }
}

function fmtState(state: Record<string, { limit: number; inUse: number; queued: number }>): string {
  return Object.entries(state)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k} ${v.limit}/${v.inUse}/${v.queued}`)
    .join("  ");
}

/** Per hop and procedure: requests and summed seconds from rpc_server_duration_seconds. */
async function serverTimes(p: TestPlatform): Promise<Map<string, { count: number; sum: number }>> {
  const out = new Map<string, { count: number; sum: number }>();
  for (const service of ["gateway", "checkout", "orders", "pricing"] as const) {
    const text = await p.metrics(service);
    for (const kind of ["count", "sum"] as const) {
      for (const s of samples(text, `rpc_server_duration_seconds_${kind}`)) {
        if (s.labels["code"] !== "ok") continue;
        const key = `${service} ${s.labels["procedure"]?.split("/").pop()}`;
        const e = out.get(key) ?? { count: 0, sum: 0 };
        e[kind] += s.value;
        out.set(key, e);
      }
    }
  }
  return out;
}

async function capacity() {
  const seconds = Number(values.seconds ?? 4);
  const p = await startTestPlatform({ env: { LOG_LEVEL: "warn" } });
  try {
    await runLoad({ gatewayUrl: p.gatewayUrl, mode: { kind: "closed", concurrency: 8, durationMs: 3000 }, clientTimeoutMs: 5000, customerPrefix: "cap-warm-" });
    for (const concurrency of [1, 8, 32, 96]) {
      const before = await serverTimes(p);
      const r = await runLoad({
        gatewayUrl: p.gatewayUrl,
        mode: { kind: "closed", concurrency, durationMs: seconds * 1000 },
        clientTimeoutMs: 5000,
        customerPrefix: `cap-${concurrency}-`,
      });
      const after = await serverTimes(p);
      const failed: Record<string, number> = {};
      for (const b of r.buckets) for (const [c, n] of Object.entries(b.failed)) failed[c] = (failed[c] ?? 0) + n;
      const lat = r.buckets.flatMap((b) => b.latenciesMs).sort((a, b) => a - b);
      console.log(
        `\nclosed loop, ${concurrency} users: ${(r.succeeded / seconds).toFixed(0)} ok/s, p50 ${lat[Math.floor(lat.length / 2)]?.toFixed(1)} ms, p99 ${lat[Math.floor(lat.length * 0.99)]?.toFixed(1)} ms, failed ${JSON.stringify(failed)}`,
      );
      for (const [key, a] of after) {
        const b = before.get(key) ?? { count: 0, sum: 0 };
        const n = a.count - b.count;
        if (n === 0 || key.includes("Health")) continue;
        const x = n / seconds;
        const w = (a.sum - b.sum) / n;
        console.log(
          `  ${key.padEnd(24)} X ${x.toFixed(0).padStart(5)}/s  W ${(w * 1000).toFixed(2).padStart(7)} ms  N = X x W ${(x * w).toFixed(2).padStart(6)}`,
        );
      }
      console.log(`  limits (limit/in-use/queued): ${fmtState(await isolationState(p))}`);
    }
  } finally {
    await p.close();
  }
}

if (mode === "capacity") await capacity();
else if (mode === "slowdown") await slowdown();
else throw new Error(`unknown mode ${mode}: slowdown or capacity`);
