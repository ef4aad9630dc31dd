/**
 * What an open, idle WatchOrder stream costs each hop: memory (heap used and
 * resident set) and CPU, with 1,000 streams open at once, against the same
 * processes with none. The platform as `npm start` runs it (compiled
 * services, embedded PostgreSQL), the stream limits raised above 1,000 for
 * one client; the streams watch one order whose receipt is not due for an
 * hour, so they stay idle but for the gateway's heartbeat.
 *
 *   flock /tmp/platform-measure.lock node --import tsx lab/streams/stream-cost.ts [--streams 1000] [--idle-s 30] [--repeat 2]
 */
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { checkoutV1 } from "@platform/proto";
import { insertHeldOrders, metricValue, startTestPlatform, type TestPlatform } from "@platform/test-support";

const { values } = parseArgs({
  options: { streams: { type: "string", default: "1000" }, "idle-s": { type: "string", default: "30" }, repeat: { type: "string", default: "2" } },
});
const streams = Number(values.streams);
const idleMs = Number(values["idle-s"]) * 1000;
const repeat = Number(values.repeat);
const hops = ["gateway", "checkout", "orders"] as const;
type Hop = (typeof hops)[number];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Sample {
  heap: number;
  rss: number;
  cpuS: number;
}

async function sample(p: TestPlatform, hop: Hop): Promise<Sample> {
  const text = await p.metrics(hop);
  return {
    heap: metricValue(text, "nodejs_heap_size_used_bytes"),
    rss: metricValue(text, "process_resident_memory_bytes"),
    cpuS: metricValue(text, "process_cpu_seconds_total"),
  };
}

/** Memory as the median of three samples a second apart; CPU over an idle window. */
async function measure(p: TestPlatform): Promise<Record<Hop, { heap: number; rss: number; cpuMsPerMin: number }>> {
  const out = {} as Record<Hop, { heap: number; rss: number; cpuMsPerMin: number }>;
  const start = Object.fromEntries(await Promise.all(hops.map(async (h) => [h, await sample(p, h)] as const))) as Record<Hop, Sample>;
  await sleep(idleMs);
  const mem: Record<Hop, Sample[]> = { gateway: [], checkout: [], orders: [] };
  for (let i = 0; i < 3; i++) {
    for (const h of hops) mem[h].push(await sample(p, h));
    await sleep(1000);
  }
  const median = (xs: number[]) => xs.toSorted((a, b) => a - b)[1]!;
  for (const h of hops) {
    const end = mem[h][0]!;
    out[h] = {
      heap: median(mem[h].map((s) => s.heap)),
      rss: median(mem[h].map((s) => s.rss)),
      cpuMsPerMin: ((end.cpuS - start[h].cpuS) * 1000 * 60_000) / idleMs,
    };
  }
  return out;
}

async function run(round: number): Promise<void> {
  const env = { STREAM_MAX_PER_CALLER: String(streams * 2), STREAM_MAX_CONCURRENT: String(streams * 2) };
  const p = await startTestPlatform({ serviceEnv: { gateway: env, checkout: env, orders: env } });
  try {
    const id = randomUUID();
    await insertHeldOrders(p.sql, [id], "stream-cost");
    const client = createClient(checkoutV1.CheckoutService, createGrpcTransport({ baseUrl: p.gatewayUrl }));
    const abort = new AbortController();
    const open = async (n: number) => {
      const its: AsyncIterator<checkoutV1.WatchOrderResponse>[] = [];
      // 50 at a time: below the gateway's WatchOrder bulkhead toward checkout (64 + 32 queued).
      for (let done = 0; done < n; done += 50) {
        its.push(
          ...(await Promise.all(
            Array.from({ length: Math.min(50, n - done) }, async () => {
              const it = client.watchOrder({ orderId: id }, { signal: abort.signal })[Symbol.asyncIterator]();
              await it.next();
              return it;
            }),
          )),
        );
      }
      return its;
    };
    // Warm-up: every code path once, then closed again.
    const warm = new AbortController();
    const w = client.watchOrder({ orderId: id }, { signal: warm.signal })[Symbol.asyncIterator]();
    await w.next();
    warm.abort();
    await w.next().catch(() => {});
    await sleep(3000);
    const none = await measure(p);
    const its = await open(streams);
    const opened = await Promise.all(hops.map(async (h) => metricValue(await p.metrics(h), "rpc_server_streams_open")));
    await sleep(3000);
    const withStreams = await measure(p);
    abort.abort();
    await Promise.all(its.map((it) => it.next().catch(() => {})));
    console.log(`run ${round}: ${streams} streams open (gateway, checkout, orders: ${opened.join(", ")}), idle window ${idleMs / 1000} s`);
    console.log("hop        heap/stream  rss/stream  cpu/stream (ms per min)  cpu idle (ms per min, none | all)");
    for (const h of hops) {
      const a = none[h];
      const b = withStreams[h];
      console.log(
        `${h.padEnd(10)} ${((b.heap - a.heap) / streams / 1024).toFixed(1).padStart(8)} KiB ${((b.rss - a.rss) / streams / 1024).toFixed(1).padStart(8)} KiB ${((b.cpuMsPerMin - a.cpuMsPerMin) / streams).toFixed(3).padStart(12)}             ${a.cpuMsPerMin.toFixed(0)} | ${b.cpuMsPerMin.toFixed(0)}`,
      );
    }
  } finally {
    await p.close();
  }
}

for (let i = 1; i <= repeat; i++) await run(i);
