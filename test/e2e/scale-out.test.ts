// npm test: alone (eight services, three of them orders replicas, under 40 requests/s of open-loop load, and every failed user request counts; beside three other test files on 2 cores the chain's admission queues time out)
/**
 * A dependency run as several replicas, with real processes and
 * PostgreSQL (`npm start -- --replicas orders=3` as the tests start it):
 * checkout balances its CreateOrder calls over the three orders replicas
 * per call; a replica killed under open-loop load costs no user request
 * and gets calls again once restarted; a frozen replica (SIGSTOP) is
 * routed around without opening the dependency's breaker. Counts and
 * shares only: how fast is the lab's business (docs/scaling.md).
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { ConnectError } from "@connectrpc/connect";
import type { RunningService } from "@platform/launcher";
import { eventually, metricValue, startTestPlatform, type TestPlatform } from "@platform/test-support";
import { sleep } from "../hardening/order-load.js";

let p: TestPlatform;
let orders: RunningService[];
const progress: string[] = [];

before(async () => {
  p = await startTestPlatform({
    replicas: { orders: 3 },
    env: { LOG_LEVEL: "warn" },
    // info: the start-up lines, which carry the replica's name.
    serviceEnv: { orders: { LOG_LEVEL: "info" } },
    onProgress: (line) => progress.push(line),
  });
  orders = p.replicas["orders"]!;
});
after(async () => {
  for (const r of orders ?? []) r.process.kill("SIGCONT");
  await p?.close();
});

const createOrder = "/orders.v1.OrdersService/CreateOrder";

/** CreateOrder calls each replica has served since it (re)started. */
async function servedByReplica(): Promise<number[]> {
  return Promise.all(
    orders.map(async (r) => metricValue(await (await fetch(`${r.adminUrl}/metrics`)).text(), "rpc_server_requests_total", { procedure: createOrder })),
  );
}

/** Checkout's attempts to each orders replica that reached it (every outcome but a refused connection). */
async function sentToReplica(): Promise<number[]> {
  const text = await p.metrics("checkout");
  return orders.map((r) =>
    ["ok", "failure", "cancelled"].reduce(
      (sum, outcome) => sum + metricValue(text, "rpc_client_replica_calls_total", { dependency: "orders", replica: r.url, outcome }),
      0,
    ),
  );
}

async function refusedBy(r: RunningService): Promise<number> {
  return metricValue(await p.metrics("checkout"), "rpc_client_replica_calls_total", { dependency: "orders", replica: r.url, outcome: "refused" });
}

async function breakerOpenings(): Promise<number> {
  return metricValue(await p.metrics("checkout"), "circuit_breaker_transitions_total", { dependency: "orders", to: "open" });
}

function placeOrder(tag: string): Promise<"ok" | string> {
  return p
    .client("connect-binary")
    .placeOrder({ customerId: `${tag}-${randomUUID()}`, items: [{ sku: "MUG-CERAMIC", quantity: 1 }] })
    .then(
      () => "ok",
      (e: unknown) => `${ConnectError.from(e).code}: ${ConnectError.from(e).rawMessage}`,
    );
}

/**
 * Open-loop load: a new user request every 1000/rate ms whatever the
 * earlier ones are doing, for `durationMs`; `at` runs actions at given
 * offsets from the start. Resolves with every failure once all settled.
 */
async function openLoop(tag: string, rate: number, durationMs: number, at: [number, () => unknown][] = []): Promise<{ sent: number; failures: string[] }> {
  const started = performance.now();
  const calls: Promise<string>[] = [];
  const actions = at.map(([offset, action]) => sleep(offset).then(action));
  for (let i = 0; performance.now() - started < durationMs; i++) {
    calls.push(placeOrder(tag));
    await sleep(Math.max(0, started + ((i + 1) * 1000) / rate - performance.now()));
  }
  await Promise.all(actions);
  const outcomes = await Promise.all(calls);
  return { sent: calls.length, failures: outcomes.filter((o) => o !== "ok") };
}

test("each replica is named in its ready line (with its pid and metrics port), its log lines and its metrics", async () => {
  assert.deepEqual(
    orders.map((r) => r.replica),
    ["orders-1", "orders-2", "orders-3"],
  );
  for (const r of orders) {
    const line = progress.find((l) => l.startsWith(`${r.replica} `));
    assert.equal(line, `${r.replica.padEnd(10)} ready on ${r.url} (pid ${r.process.pid}, metrics ${r.adminUrl}/metrics)`);
    const metrics = await (await fetch(`${r.adminUrl}/metrics`)).text();
    assert.match(metrics, new RegExp(`^process_cpu_seconds_total\\{replica="${r.replica}"\\}`, "m"));
    const firstLog = JSON.parse(readFileSync(r.logFile, "utf8").split("\n")[0]!) as { service: string; replica: string };
    assert.deepEqual([firstLog.service, firstLog.replica], ["orders", r.replica]);
  }
  assert.equal(new Set(orders.map((r) => r.port)).size, 3, "three ports");
});

test("three orders replicas each serve a third of CreateOrder (33 % ± 10 points)", async () => {
  const before = await servedByReplica();
  const { sent, failures } = await openLoop("share", 40, 6_000);
  assert.deepEqual(failures, []);
  const served = (await servedByReplica()).map((n, i) => n - before[i]!);
  const total = served.reduce((a, b) => a + b, 0);
  console.log(`[scale-out] shares of ${total} CreateOrder calls: ${served.map((n) => `${Math.round((1000 * n) / total) / 10} %`).join(", ")}`);
  assert.equal(total, sent, "each order created once");
  for (const n of served) assert.ok(Math.abs(n / total - 1 / 3) <= 0.1, `shares of ${total}: ${served.join(", ")}`);
});

test("a replica SIGKILLed under open-loop load: no user request fails; its address is tried no more than its ejections' probes; it serves again once restarted", async () => {
  const victim = orders[1]!;
  const pid = victim.process.pid;
  let refusedAfterOneSecond = 0;
  let refusedUntilRestart = 0;
  const { sent, failures } = await openLoop("kill", 40, 10_000, [
    [2_000, () => victim.process.kill("SIGKILL")],
    [3_000, async () => (refusedAfterOneSecond = await refusedBy(victim))],
    [
      3_000,
      async () => {
        await eventually(() => victim.process.ready && victim.process.pid !== pid, "the killed replica restarted", 600, 50);
        refusedUntilRestart = await refusedBy(victim);
      },
    ],
  ]);
  console.log(
    `[scale-out] kill: ${sent} sent, ${failures.length} failed; refused by the dead replica: ${refusedAfterOneSecond} in its first second, ${refusedUntilRestart} until its restart`,
  );
  assert.deepEqual(failures, [], "the gateway's retry (same idempotency key) covered the calls in flight");
  // Ejected at its first refusal; readmitted to be probed after 1 s, then 2 s, 4 s (outlier-detector.ts): each
  // readmission can meet at most the calls checkout has in flight, a handful at 40 requests/s.
  assert.ok(refusedUntilRestart - refusedAfterOneSecond <= 3 * 8, `refused after the first second: ${refusedUntilRestart - refusedAfterOneSecond}`);
  const served = await servedByReplica();
  assert.ok(served[1]! > 0, `the restarted replica served ${served[1]} CreateOrder calls`);
});

test("a replica frozen by SIGSTOP: from 2 s on it is sent under 10 % of the calls, and the dependency's breaker stays closed", async () => {
  const victim = orders[2]!;
  const openingsBefore = await breakerOpenings();
  let from: number[] = [];
  let to: number[] = [];
  try {
    await openLoop("stop", 40, 10_000, [
      [2_000, () => victim.process.kill("SIGSTOP")],
      [4_000, async () => (from = await sentToReplica())],
      [9_000, async () => (to = await sentToReplica())],
    ]);
  } finally {
    victim.process.kill("SIGCONT");
  }
  const window = to.map((n, i) => n - from[i]!);
  const total = window.reduce((a, b) => a + b, 0);
  console.log(`[scale-out] stop: attempts per replica from 2 s to 7 s after the freeze: ${window.join(", ")}`);
  assert.ok(total > 0);
  assert.ok(window[2]! / total < 0.1, `the frozen replica's share: ${window[2]} of ${total}`);
  assert.equal(await breakerOpenings(), openingsBefore, "the breaker of orders never opened");
});
