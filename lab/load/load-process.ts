/**
 * The load generator, run as its own process (see run-load.ts) so that its
 * CPU and event loop are not the runner's. It receives one LoadConfig over
 * IPC, sends the requests (open or closed loop), reports per-bucket results
 * and exits. Bounded in time and count; loopback only; stops by itself, and
 * at once if its parent goes away.
 */
import { ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { checkoutV1 } from "@platform/proto";
import { demoSkus, operation, RecentOrders } from "./request-mix.js";
import type { Bucket, FromLoad, LoadConfig, LoadResult, StopWhenBehind, ToLoad, TryRecord } from "./protocol.js";
import { codeName } from "./code-name.js";
import { assertLoopback } from "./loopback.js";

type CheckoutClient = Client<typeof checkoutV1.CheckoutService>;

function send(msg: FromLoad): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) return resolve();
    process.send(msg, undefined, {}, () => resolve());
  });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)));

class Recorder {
  readonly buckets: Bucket[] = [];
  readonly failedOrderCustomers: string[] = [];
  readonly tries: TryRecord[] = [];
  sent = 0;
  succeeded = 0;
  operations = 0;
  operationsServed = 0;
  skipped = 0;
  /** User operations in flight (including their pauses between tries). */
  inFlight = 0;
  /** Tries sent and not yet ended; tries ended, and those of them that failed. */
  triesInFlight = 0;
  triesEnded = 0;
  triesFailed = 0;
  lastCompletion = 0;
  /** Users who gave up a further try because the run was over (see `endAt`). */
  cutShort = 0;
  /** Epoch ms the schedule ends: no try starts after it (set once the run's length is known). */
  endAt = Number.POSITIVE_INFINITY;
  constructor(
    readonly startAt: number,
    private readonly bucketMs: number,
  ) {}

  bucket(at: number): Bucket {
    const i = Math.max(0, Math.floor((at - this.startAt) / this.bucketMs));
    while (this.buckets.length <= i) {
      this.buckets.push({
        offered: 0,
        sent: 0,
        succeeded: 0,
        usersServed: 0,
        timeouts: 0,
        orders: 0,
        readsOffered: 0,
        reads: 0,
        failed: {},
        latenciesMs: [],
        succeededEnded: 0,
      });
    }
    return this.buckets[i]!;
  }
}

const oneTry: NonNullable<LoadConfig["user"]> = { maxTries: 1, errorPauseMs: 0, honourRetryAfter: false, maxRetryAfterMs: 0 };

/** The server's Retry-After (seconds) or grpc-retry-pushback-ms on a failure, in ms. */
function pushbackMs(err: ConnectError): number | undefined {
  const ms = Number(err.metadata.get("grpc-retry-pushback-ms"));
  if (Number.isFinite(ms) && ms >= 0 && err.metadata.has("grpc-retry-pushback-ms")) return ms;
  const after = err.metadata.get("retry-after");
  const s = after === null ? Number.NaN : Number(after);
  return Number.isFinite(s) && s >= 0 ? s * 1000 : undefined;
}

/**
 * One user operation: up to `user.maxTries` requests (see UserModel). Each
 * try carries its own x-request-id (`<prefix>u<n>.<try>`), so that the work
 * it causes at every hop can be attributed to it, and goes to the bucket
 * of its send time with its fate.
 */
async function operate(client: CheckoutClient, cfg: LoadConfig, rec: Recorder, n: number, skus: string[], recent: RecentOrders): Promise<void> {
  const op = operation(n, cfg.mix, cfg.customerPrefix, skus, recent);
  const user = cfg.user ?? oneTry;
  const first = rec.bucket(Date.now());
  first.offered++;
  if (op.kind === "getOrder") first.readsOffered++;
  rec.operations++;
  rec.inFlight++;
  let served = false;
  try {
    for (let attempt = 1; attempt <= user.maxTries && rec.sent < cfg.maxRequests; attempt++) {
      const sentAt = Date.now();
      const b = rec.bucket(sentAt);
      const id = `${cfg.customerPrefix}u${n}.${attempt}`;
      const headers: Record<string, string> = { "x-request-id": id };
      // One key for every try of one order: a resubmitted form must not buy twice.
      if (op.kind === "placeOrder") headers["idempotency-key"] = `${cfg.customerPrefix}k${n}`;
      b.sent = (b.sent ?? 0) + 1;
      rec.sent++;
      rec.triesInFlight++;
      const t0 = performance.now();
      let outcome = "ok";
      let pause = 0;
      try {
        const res = await op.call(client, { timeoutMs: cfg.clientTimeoutMs, headers });
        b.succeeded++;
        const ended = rec.bucket(Date.now());
        ended.succeededEnded = (ended.succeededEnded ?? 0) + 1;
        b.latenciesMs.push(Math.round((performance.now() - t0) * 10) / 10);
        rec.succeeded++;
        if (op.kind === "getOrder") b.reads++;
        if (op.kind === "placeOrder") {
          b.orders++;
          const orderId = (res as checkoutV1.PlaceOrderResponse).order?.id;
          if (orderId) op.onOrder?.(orderId);
        }
        served = true;
      } catch (e) {
        const err = ConnectError.from(e);
        rec.triesFailed++;
        // The user's own patience ran out (the client's deadline), or the server said so.
        const timedOut = performance.now() - t0 >= cfg.clientTimeoutMs - 5;
        outcome = timedOut ? "timeout" : codeName(err.code);
        if (timedOut) b.timeouts = (b.timeouts ?? 0) + 1;
        const code = codeName(err.code);
        b.failed[code] = (b.failed[code] ?? 0) + 1;
        const hint = user.honourRetryAfter ? pushbackMs(err) : undefined;
        pause = timedOut ? 0 : hint !== undefined ? Math.min(hint, user.maxRetryAfterMs) : user.errorPauseMs;
      }
      rec.triesInFlight--;
      rec.triesEnded++;
      if (cfg.recordTries) rec.tries.push({ id, kind: op.kind, sentAtMs: sentAt - rec.startAt, outcome });
      if (served) break;
      if (attempt < user.maxTries) {
        // The run ends with its schedule: a try after it would land in no
        // window the analysis reads, and a stack still retrying inside would
        // hold the run open for up to (tries - 1) x (patience + pause) more.
        if (Date.now() + pause >= rec.endAt) {
          rec.cutShort++;
          break;
        }
        await sleep(pause);
      }
    }
  } finally {
    if (served) {
      first.usersServed = (first.usersServed ?? 0) + 1;
      rec.operationsServed++;
    } else if (op.customerId !== undefined) rec.failedOrderCustomers.push(op.customerId);
    rec.inFlight--;
    rec.lastCompletion = Date.now();
  }
}

/** Why the stack is behind the schedule (see StopWhenBehind), or undefined while it keeps up. */
function behind(rec: Recorder, stop: StopWhenBehind, rate: number): "failures" | "queue" | undefined {
  if (rec.triesFailed >= stop.minFailures && rec.triesFailed > stop.failedShare * rec.triesEnded) return "failures";
  if (rec.triesInFlight > (rate * stop.queueMs) / 1000) return "queue";
  return undefined;
}

async function catalogue(client: CheckoutClient): Promise<string[]> {
  try {
    const { products } = await client.listProducts({}, { timeoutMs: 2000 });
    return products.length > 0 ? products.map((p) => p.sku) : demoSkus;
  } catch {
    return demoSkus;
  }
}

interface Prepared {
  clients: CheckoutClient[];
  skus: string[];
}

async function prepare(cfg: Omit<LoadConfig, "startAt">): Promise<Prepared> {
  assertLoopback(cfg.gatewayUrl, "load generator");
  const clients: CheckoutClient[] = Array.from({ length: Math.max(1, cfg.connections) }, () =>
    createClient(checkoutV1.CheckoutService, createConnectTransport({ baseUrl: cfg.gatewayUrl, httpVersion: "2", useBinaryFormat: true })),
  );
  // One call per connection opens it (and loads the code paths) before the clock starts.
  const skus = await catalogue(clients[0]!);
  await Promise.all(clients.slice(1).map((c) => catalogue(c)));
  return { clients, skus };
}

async function run(cfg: LoadConfig, { clients, skus }: Prepared): Promise<LoadResult> {
  const recent = new RecentOrders();
  const rec = new Recorder(cfg.startAt, cfg.bucketMs);
  const pending = new Set<Promise<void>>();
  let n = 0;
  const fire = () => {
    if (rec.sent >= cfg.maxRequests || rec.inFlight >= cfg.maxInFlight) {
      rec.skipped++;
      return;
    }
    const p = operate(clients[n % clients.length]!, cfg, rec, n, skus, recent);
    n++;
    pending.add(p);
    void p.finally(() => pending.delete(p));
  };

  await sleep(cfg.startAt - Date.now());
  let scheduledMs: number;
  let stoppedBehind: LoadResult["stoppedBehind"];
  if (cfg.mode.kind === "open") {
    scheduledMs = cfg.mode.phases.reduce((s, p) => s + p.durationMs, 0);
    rec.endAt = cfg.startAt + scheduledMs;
    const stop = cfg.mode.stopWhenBehind;
    let phaseStart = cfg.startAt;
    schedule: for (const phase of cfg.mode.phases) {
      const phaseEnd = phaseStart + phase.durationMs;
      let started = 0;
      // Arrivals are due at a constant rate from the phase start; a late
      // tick catches up, so the offered rate does not depend on responses.
      for (;;) {
        const now = Date.now();
        const due = Math.floor((Math.min(now, phaseEnd) - phaseStart) * (phase.rate / 1000));
        while (started < due) {
          started++;
          fire();
        }
        const reason = stop ? behind(rec, stop, phase.rate) : undefined;
        if (reason) {
          stoppedBehind = { rate: phase.rate, reason };
          scheduledMs = now - cfg.startAt;
          rec.endAt = now;
          break schedule;
        }
        if (now >= phaseEnd) break;
        await sleep(Math.min(5, phaseEnd - now));
      }
      phaseStart = phaseEnd;
    }
  } else {
    const { concurrency, durationMs } = cfg.mode;
    scheduledMs = durationMs;
    const end = cfg.startAt + durationMs;
    rec.endAt = end;
    const user = async () => {
      while (Date.now() < end && rec.sent < cfg.maxRequests) {
        const i = n++;
        await operate(clients[i % clients.length]!, cfg, rec, i, skus, recent);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, user));
  }
  // No try starts after the schedule and every try carries its timeout, so this ends within one patience of it.
  await Promise.all(pending);
  return {
    startedAt: cfg.startAt,
    endedAt: Math.max(rec.lastCompletion, cfg.startAt + scheduledMs),
    scheduledMs,
    bucketMs: cfg.bucketMs,
    buckets: rec.buckets,
    sent: rec.sent,
    succeeded: rec.succeeded,
    operations: rec.operations,
    operationsServed: rec.operationsServed,
    ...(cfg.recordTries ? { tries: rec.tries } : {}),
    skipped: rec.skipped,
    ...(stoppedBehind ? { stoppedBehind } : {}),
    cutShort: rec.cutShort,
    failedOrderCustomers: rec.failedOrderCustomers,
  };
}

// The runner going away ends the run at once: never load a platform nobody watches.
process.on("disconnect", () => process.exit(0));

const fail = async (e: unknown) => {
  await send({ type: "error", message: e instanceof Error ? (e.stack ?? e.message) : String(e) });
  process.exit(1);
};

let config: Omit<LoadConfig, "startAt"> | undefined;
let prepared: Promise<Prepared> | undefined;
process.on("message", (msg: ToLoad) => {
  if (msg.type === "prepare" && !prepared) {
    config = msg.config;
    prepared = prepare(msg.config);
    prepared.then(() => send({ type: "ready" }), fail);
  } else if (msg.type === "start" && prepared && config) {
    const mode = msg.phases && config.mode.kind === "open" ? { ...config.mode, phases: msg.phases } : config.mode;
    const cfg: LoadConfig = { ...config, mode, startAt: msg.startAt };
    prepared
      .then((p) => run(cfg, p))
      .then(async (result) => {
        await send({ type: "result", result });
        process.exit(0);
      }, fail);
  }
});
