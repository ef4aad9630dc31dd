/**
 * The bench's load generator, forked by load-worker-client.ts so that it
 * never shares an event loop (or its CPU accounting) with a measured
 * service. It lives for the whole run and runs one leg at a time:
 * "prepare" opens the leg's connections and warms them (one call per user,
 * GetOrder also places the orders it will read), then "go" runs the closed
 * loop and reports. Every leg is bounded in time and in count, every call
 * carries a deadline; loopback only; exits when its parent goes away.
 */
import { randomUUID } from "node:crypto";
import { ConnectError } from "@connectrpc/connect";
import { checkoutV1, ordersV1, pricingV1 } from "@platform/proto";
import { codeName } from "../load/code-name.js";
import { demoSkus } from "../load/request-mix.js";
import { clientFactory } from "./bench-clients.js";
import { ceilingPool, placeOrderStatements } from "./db-ceiling.js";
import type { FromWorker, LegResult, LegSpec, Target, TargetResult, ToWorker } from "./leg.js";

type Call = (n: number) => Promise<unknown>;

interface Prepared {
  call: Call;
  close(): Promise<void> | void;
}

/** i mod m, never negative: warm-up and set-up calls use negative n. */
const mod = (i: number, m: number) => ((i % m) + m) % m;

/** Request n's order lines: always two SKUs, the same sequence for both chains. */
function items(n: number): Array<{ sku: string; quantity: number }> {
  const sku = (i: number) => demoSkus[mod(i, demoSkus.length)]!;
  return [
    { sku: sku(n), quantity: 1 + mod(n, 3) },
    { sku: sku(n + 2), quantity: 1 },
  ];
}

/** Orders GetOrder reads, placed through the same target before the clock starts. */
const ordersToRead = 16;

async function prepare(leg: LegSpec, target: Target, labelSuffix: string): Promise<Prepared> {
  const customer = (n: number) => `bench-${leg.label}${labelSuffix}-${n}`;
  if (target.kind === "db") {
    const pool = ceilingPool(target.databaseUrl, leg.concurrency);
    return { call: (n) => placeOrderStatements(pool, customer(n), items(n)), close: () => pool.end() };
  }
  const { baseUrl, protocol, idempotencyHeader, headers } = target;
  const clients = clientFactory(baseUrl, protocol, leg.concurrency);
  // Headers only where a target has some: the plain chain's calls stay exactly as they were.
  const opts = headers ? { timeoutMs: leg.timeoutMs, headers } : { timeoutMs: leg.timeoutMs };
  const withKey = () => (idempotencyHeader ? { ...opts, headers: { ...headers, "idempotency-key": randomUUID() } } : opts);
  const checkout = clients.client(checkoutV1.CheckoutService);
  let call: Call;
  switch (leg.operation) {
    case "checkout.ListProducts":
      call = () => checkout.listProducts({}, opts);
      break;
    case "checkout.PlaceOrder":
      call = (n) => checkout.placeOrder({ customerId: customer(n), items: items(n) }, withKey());
      break;
    case "checkout.GetOrder": {
      const placed = await Promise.allSettled(
        Array.from({ length: ordersToRead }, (_, i) => checkout.placeOrder({ customerId: customer(-1 - i), items: items(i) }, withKey())),
      );
      const ids = placed.flatMap((r) => (r.status === "fulfilled" && r.value.order ? [r.value.order.id] : []));
      if (ids.length === 0) {
        const first = placed.find((r) => r.status === "rejected");
        throw new Error(`GetOrder: could not place a single order to read (${first ? String(first.reason) : "no order returned"})`);
      }
      call = (n) => checkout.getOrder({ orderId: ids[mod(n, ids.length)]! }, opts);
      break;
    }
    case "orders.CreateOrder": {
      const orders = clients.client(ordersV1.OrdersService);
      call = (n) => orders.createOrder({ idempotencyKey: randomUUID(), customerId: customer(n), items: items(n) }, opts);
      break;
    }
    case "pricing.GetPrices": {
      const pricing = clients.client(pricingV1.PricingService);
      call = (n) => pricing.getPrices({ skus: items(n).map((i) => i.sku) }, opts);
      break;
    }
    case "pricing.ListProducts": {
      const pricing = clients.client(pricingV1.PricingService);
      call = () => pricing.listProducts({}, opts);
      break;
    }
    default:
      throw new Error(`operation ${leg.operation} needs a database target`);
  }
  return { call, close: () => clients.close() };
}

/**
 * One call per user, concurrently: opens every connection and stream
 * before the clock starts. A refusal here (a bulkhead that sheds a burst)
 * is not ours to judge: the measured loop counts failures.
 */
async function warm(p: Prepared, concurrency: number): Promise<void> {
  await Promise.allSettled(Array.from({ length: concurrency }, (_, i) => p.call(-1000 - i)));
}

/** A leg's targets: `target`, then the alternate if any. */
type Targets = readonly [Prepared] | readonly [Prepared, Prepared];

/**
 * With an alternate, requests go to the two targets in blocks of this
 * many, not one by one: a client that sends its next request as soon as
 * the last one is answered is what the measurement is about, and TCP's
 * delayed ACKs (and with them Nagle's stalls) depend on that rhythm.
 * Alternating every request spaced each connection's requests out, and
 * the 40 ms stall of h2c through the pre-fix gateway came and went with
 * the machine's load.
 */
const alternateBlock = 20;

async function run(leg: LegSpec, targets: Targets): Promise<LegResult> {
  const results: TargetResult[] = targets.map(() => ({ succeeded: 0, failed: {}, failureSamples: {}, latenciesMs: [], busyMs: 0 }));
  let started = 0;
  const t0 = performance.now();
  const end = t0 + leg.durationMs;
  const hardEnd = t0 + Math.max(leg.durationMs, leg.maxDurationMs);
  let lastAnswer = t0;
  // With an alternate, each target gets at least one block even past the hard end: on a machine
  // slow enough that the first block outlasts it, the second target would otherwise get no request
  // at all and the pair could not be compared (seen with 1.9 of 2 cores busy elsewhere).
  const firstBlocks = targets.length > 1 ? alternateBlock * targets.length : 0;
  const more = () => {
    const now = performance.now();
    return started < leg.maxRequests && (started < firstBlocks || (now < hardEnd && (now < end || started < leg.minRequests)));
  };
  // Time slices: the target is the one whose slice it is when a request starts. The calls still in
  // flight when a slice ends finish in the next one; the order alternates from leg to leg, so that
  // overlap falls on both targets alike. Each target's time is its calls' (busyMs; run-bench.ts).
  const sliceMs = targets.length > 1 ? leg.sliceMs : undefined;
  const targetOf = (n: number) =>
    sliceMs === undefined ? Math.floor(n / alternateBlock) % targets.length : Math.floor((performance.now() - t0) / sliceMs) % targets.length;
  const user = async () => {
    while (more()) {
      const n = started++;
      const i = targetOf(n);
      const r = results[i]!;
      const s = performance.now();
      try {
        await targets[i]!.call(n);
        r.latenciesMs.push(Math.round((performance.now() - s) * 100) / 100);
        r.succeeded++;
      } catch (e) {
        const code = leg.target.kind === "db" ? "db_error" : codeName(ConnectError.from(e).code);
        r.failed[code] = (r.failed[code] ?? 0) + 1;
        r.failureSamples[code] ??= (e instanceof Error ? e.message : String(e)).slice(0, 300);
      }
      lastAnswer = performance.now();
      r.busyMs += lastAnswer - s;
    }
  };
  await Promise.all(Array.from({ length: leg.concurrency }, user));
  const [primary, alternate] = results;
  return { ...primary!, elapsedMs: lastAnswer - t0, ...(alternate ? { alternate } : {}) };
}

function send(msg: FromWorker): void {
  process.send?.(msg);
}

// Never load anything nobody watches.
process.on("disconnect", () => process.exit(0));

async function prepareAll(leg: LegSpec): Promise<Targets> {
  const primary = await prepare(leg, leg.target, "");
  try {
    const targets: Targets = leg.alternate ? [primary, await prepare(leg, leg.alternate, "-alt")] : [primary];
    for (const t of targets) await warm(t, leg.concurrency);
    return targets;
  } catch (e) {
    await primary.close();
    throw e;
  }
}

let current: { leg: LegSpec; prepared: Promise<Targets> } | undefined;
process.on("message", (msg: ToWorker) => {
  const fail = (e: unknown) => {
    current = undefined;
    send({ type: "error", message: e instanceof Error ? (e.stack ?? e.message) : String(e) });
  };
  if (msg.type === "prepare") {
    const prepared = prepareAll(msg.leg);
    current = { leg: msg.leg, prepared };
    prepared.then(() => send({ type: "prepared" }), fail);
  } else if (msg.type === "go" && current) {
    const { leg, prepared } = current;
    current = undefined;
    prepared
      .then(async (targets) => {
        try {
          return await run(leg, targets);
        } finally {
          for (const t of targets) await t.close();
        }
      })
      .then((result) => send({ type: "result", result }), fail);
  }
});
