/**
 * The scale-out lab: three orders replicas behind two checkouts, balanced
 * per connection (what a ClusterIP Service gives: BALANCING=per-connection)
 * against per call (the platform), in one run:
 *
 *   shares        each orders replica's share of CreateOrder under open-loop PlaceOrder;
 *   replica dies  the busiest orders replica SIGKILLed under open-loop PlaceOrder:
 *                 user requests that failed (one attempt per user; the gateway's retry inside);
 *   slow replica  the busiest orders replica's database made slow (FAULTS db.latencyMs):
 *                 GetOrder p50/p99 at the user and the slow replica's share of GetOrder, per
 *                 connection, per call, and per call with hedged reads (HEDGE_READS=true, at
 *                 the 95th and at the 75th percentile).
 *
 *   flock /tmp/platform-measure.lock node --import tsx lab/replica-dies.ts [--rate 40] [--seconds 10] [--slow-ms 100]
 *
 * Services from their build (`npm run build` first). Open loop: a new
 * request every 1/rate s whatever the earlier ones do; each user sends
 * once. The table goes to stdout and reports/replica-dies/<time>.txt.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { startPlatform, type Platform, type RunningService } from "@platform/launcher";
import { checkoutV1 } from "@platform/proto";
import { chainManifests } from "./chain.js";
import { percentile, round } from "./stats.js";

const { values } = parseArgs({
  options: { rate: { type: "string", default: "40" }, seconds: { type: "string", default: "10" }, "slow-ms": { type: "string", default: "100" } },
});
const rate = Number(values.rate);
const seconds = Number(values.seconds);
const slowMs = Number(values["slow-ms"]);

type Mode = "per-connection" | "per-call" | "per-call + hedging" | "per-call + hedging p75";

interface Lab {
  platform: Platform;
  client: Client<typeof checkoutV1.CheckoutService>;
  orders: RunningService[];
  faultToken: string;
  close(): Promise<void>;
}

async function startLab(mode: Mode): Promise<Lab> {
  const dataDir = mkdtempSync(join(tmpdir(), "replica-dies-"));
  // The embedded PostgreSQL runs as its own user, which must reach its data directory.
  chmodSync(dataDir, 0o755);
  const faultToken = randomBytes(24).toString("hex");
  const platform = await startPlatform({
    dataDir,
    manifests: chainManifests(),
    freePorts: true,
    from: "build",
    replicas: { orders: 3, checkout: 2 },
    env: {
      LOG_LEVEL: "warn",
      FAULT_INJECTION: "enabled",
      FAULT_INJECTION_TOKEN: faultToken,
      BALANCING: mode === "per-connection" ? "per-connection" : "per-call",
      ...(mode.includes("hedging") ? { HEDGE_READS: "true" } : {}),
      ...(mode === "per-call + hedging p75" ? { HEDGE_QUANTILE: "75" } : {}),
    },
  });
  return {
    platform,
    client: createClient(checkoutV1.CheckoutService, createGrpcTransport({ baseUrl: platform.gatewayUrl })),
    orders: platform.replicas["orders"]!,
    faultToken,
    async close() {
      await platform.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Open loop for `ms`: one `call` every 1/rate s; `at` runs actions at offsets. Every call's outcome and latency. */
async function openLoop(ms: number, call: () => Promise<unknown>, at: [number, () => unknown][] = []): Promise<{ ok: number[]; failed: string[] }> {
  const started = performance.now();
  const calls: Promise<{ ms: number; error?: string }>[] = [];
  const actions = at.map(([offset, action]) => sleep(offset).then(action));
  for (let i = 0; performance.now() - started < ms; i++) {
    const t = performance.now();
    calls.push(
      call().then(
        () => ({ ms: performance.now() - t }),
        (e: unknown) => ({ ms: performance.now() - t, error: Code[ConnectError.from(e).code] ?? "unknown" }),
      ),
    );
    await sleep(Math.max(0, started + ((i + 1) * 1000) / rate - performance.now()));
  }
  await Promise.all(actions);
  const outcomes = await Promise.all(calls);
  return { ok: outcomes.filter((o) => o.error === undefined).map((o) => o.ms), failed: outcomes.flatMap((o) => (o.error ? [o.error] : [])) };
}

const placeOrder = (lab: Lab) => () => lab.client.placeOrder({ customerId: `lab-${randomUUID()}`, items: [{ sku: "MUG-CERAMIC", quantity: 1 }] });

async function servedCounts(lab: Lab, method = "CreateOrder"): Promise<number[]> {
  return Promise.all(
    lab.orders.map(async (r) => {
      const text = await (await fetch(`${r.adminUrl}/metrics`)).text();
      let n = 0;
      for (const line of text.split("\n"))
        if (line.startsWith("rpc_server_requests_total{") && line.includes(`/${method}"`)) n += Number(line.split(" ").at(-1));
      return n;
    }),
  );
}

/** The replica that served the most CreateOrder calls so far: the one the scenarios hit. */
async function busiest(lab: Lab): Promise<number> {
  const counts = await servedCounts(lab);
  return counts.indexOf(Math.max(...counts));
}

const lines: string[] = [];
const say = (line: string) => {
  lines.push(line);
  process.stdout.write(`${line}\n`);
};

say(`replica-dies lab: orders x3, checkout x2; open loop ${rate} requests/s for ${seconds} s per leg; slow replica +${slowMs} ms per statement`);
say(
  `machine: ${(await import("node:os"))
    .loadavg()
    .map((x) => round(x, 2))
    .join(" ")} load average at start`,
);
say("");
say("mode                     CreateOrder shares (%)   replica killed: failed / sent   GetOrder p50 / p99 ms, one slow replica (its share)   hedges");

for (const mode of ["per-connection", "per-call", "per-call + hedging", "per-call + hedging p75"] as const) {
  // Shares and the kill on one platform; the slow replica on a fresh one (the kill leaves a cold replica).
  let shares = "-";
  let killed = "-";
  if (!mode.includes("hedging")) {
    const lab = await startLab(mode);
    try {
      const before = await servedCounts(lab);
      const warm = await openLoop(seconds * 1000, placeOrder(lab));
      const served = (await servedCounts(lab)).map((n, i) => n - before[i]!);
      const total = served.reduce((a, b) => a + b, 0);
      shares = served.map((n) => round((100 * n) / total, 1)).join(" / ");
      if (warm.failed.length > 0) shares += ` (${warm.failed.length} failed)`;
      const victim = lab.orders[await busiest(lab)]!;
      const kill = await openLoop(seconds * 1000, placeOrder(lab), [[2_000, () => victim.process.kill("SIGKILL")]]);
      killed = `${kill.failed.length} / ${kill.ok.length + kill.failed.length}${kill.failed.length > 0 ? ` (${[...new Set(kill.failed)].join(", ")})` : ""}`;
    } finally {
      await lab.close();
    }
  }
  const lab = await startLab(mode);
  let slow: string;
  let hedges = "-";
  try {
    const ids: string[] = [];
    await openLoop(seconds * 500, async () => {
      const { order } = await lab.client.placeOrder({ customerId: `lab-${randomUUID()}`, items: [{ sku: "MUG-CERAMIC", quantity: 1 }] });
      if (order) ids.push(order.id);
    });
    const slowAt = await busiest(lab);
    const victim = lab.orders[slowAt]!;
    const res = await fetch(`${victim.adminUrl}/admin/faults`, {
      method: "PUT",
      headers: { authorization: `Bearer ${lab.faultToken}` },
      body: JSON.stringify({ db: { latencyMs: slowMs } }),
    });
    if (!res.ok) throw new Error(`setting the slow replica's faults: ${res.status} ${await res.text()}`);
    let i = 0;
    const readsBefore = await servedCounts(lab, "GetOrder");
    const reads = await openLoop(seconds * 1000, () => lab.client.getOrder({ orderId: ids[i++ % ids.length]! }));
    const served = (await servedCounts(lab, "GetOrder")).map((n, k) => n - readsBefore[k]!);
    const slowShare = round((100 * served[slowAt]!) / served.reduce((a: number, b: number) => a + b, 0), 1);
    slow = `${round(percentile(reads.ok, 50), 1)} / ${round(percentile(reads.ok, 99), 1)} (${slowShare} %)${reads.failed.length > 0 ? ` (${reads.failed.length} failed)` : ""}`;
    if (mode.includes("hedging")) {
      const text = await (await fetch(`${lab.platform.services["gateway"].adminUrl}/metrics`)).text();
      const value = (name: string) =>
        text
          .split("\n")
          .filter((l) => l.startsWith(`${name}{`))
          .reduce((n, l) => n + Number(l.split(" ").at(-1)), 0);
      hedges = `${value("hedge_sent_total")} sent, ${value("hedge_won_total")} won, ${value("hedge_refused_total")} refused`;
    }
  } finally {
    await lab.close();
  }
  say(`${mode.padEnd(24)} ${shares.padEnd(24)} ${killed.padEnd(31)} ${slow.padEnd(53)} ${hedges}`);
}

const dir = join("reports", "replica-dies");
mkdirSync(dir, { recursive: true });
const file = join(dir, `${new Date().toISOString().replaceAll(":", "-")}.txt`);
writeFileSync(file, `${lines.join("\n")}\n`);
say(`wrote ${file}`);
