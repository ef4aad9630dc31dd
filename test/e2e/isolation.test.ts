/**
 * Isolation (invariant 6) with the settings we ship: no bulkhead, limit or
 * breaker variable is set here. A slow pricing database takes only the
 * slots of the calls that need pricing; GetOrder, which never does, keeps
 * working at every hop; the calls that cannot be served are refused in a
 * fraction of their deadline, with a pushback hint; and a failing pricing is
 * cut off by its breaker. Real processes and PostgreSQL; the slowdown is a
 * real lock on pricing's table, not an injected fault.
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import pg from "pg";
import { loadConfig as loadOrdersConfig } from "../../services/orders/src/config.js";
import { eventually, metricValue, setServiceFaults, startTestPlatform, type TestPlatform } from "@platform/test-support";

let p: TestPlatform;
before(async () => {
  p = await startTestPlatform({ faultInjection: true, env: { LOG_LEVEL: "warn" } });
});
after(async () => {
  await p?.close();
});
beforeEach(async () => {
  for (const s of ["gateway", "checkout", "orders", "pricing"] as const) await setServiceFaults(p, s, {});
});

const item = { sku: "MUG-CERAMIC", quantity: 1 };

/** Every (dependency, class) bulkhead of a service: its limit now and the calls holding a slot. */
function bulkheads(text: string): { key: string; limit: number; inUse: number }[] {
  const out: { key: string; limit: number; inUse: number }[] = [];
  for (const m of text.matchAll(/^bulkhead_limit\{([^}]*)\}\s+(\S+)$/gm)) {
    const labels = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1]!, x[2]!]));
    const dependency = labels["dependency"]!;
    const cls = labels["class"]!;
    out.push({ key: `${dependency}/${cls}`, limit: Number(m[2]), inUse: metricValue(text, "bulkhead_in_use", { dependency, class: cls }) });
  }
  return out;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.floor(s.length / 2)]!;
}

describe("a slow pricing database (its table locked), with the shipped defaults", () => {
  test("GetOrder succeeds every time; PlaceOrder is refused in a fraction of its deadline with a pushback hint once pricing's limit is reached; no bulkhead above orders fills; only pricing's slots in orders wait for the lock; pricing's limit shrinks", async () => {
    const client = p.client("grpc");
    // A running system has history: normal traffic first (the limits' baselines).
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const { order } = await client.placeOrder({ customerId: `iso-warm-${randomUUID()}`, items: [item] });
      ids.push(order!.id);
      await client.getOrder({ orderId: order!.id });
    }
    const pricingLimit = () => p.metrics("orders").then((t) => metricValue(t, "bulkhead_limit", { dependency: "pricing" }));
    const limitBefore = await pricingLimit();

    const locker = new pg.Client({ connectionString: p.databaseUrl });
    await locker.connect();
    try {
      await locker.query("BEGIN");
      await locker.query("LOCK TABLE pricing.products IN ACCESS EXCLUSIVE MODE");
      // The deadline. Refusal times are asserted as a share of it.
      const deadlineMs = 5000;
      let stop = false;

      // The fast method, never needing pricing: 4 readers calling GetOrder
      // throughout (closed loop, 25 ms apart: a CPU stall on this shared
      // machine must not pile reads up and read as isolation failing).
      const gets: { ok: boolean; code: string; reader: number; startedAt: number; endedAt: number }[] = [];
      const getLoop = Promise.all(
        Array.from({ length: 4 }, async (_, r) => {
          for (let i = r; !stop; i += 4) {
            const startedAt = performance.now();
            const outcome = await client.getOrder({ orderId: ids[i % ids.length]! }, { timeoutMs: deadlineMs }).then(
              () => ({ ok: true, code: "ok" }),
              (e: unknown) => ({ ok: false, code: `${Code[ConnectError.from(e).code]}: ${ConnectError.from(e).rawMessage}` }),
            );
            gets.push({ ...outcome, reader: r, startedAt, endedAt: performance.now() });
            await new Promise((res) => setTimeout(res, 25));
          }
        }),
      );

      // The slow method: 60 PlaceOrders, 40 ms apart.
      const places = Array.from({ length: 60 }, async (_, i) => {
        await new Promise((r) => setTimeout(r, i * 40));
        const started = performance.now();
        try {
          await client.placeOrder({ customerId: `iso-slow-${randomUUID()}`, items: [item] }, { timeoutMs: deadlineMs });
          return { startedAt: started, endedAt: performance.now(), ms: performance.now() - started, code: "ok", pushback: false };
        } catch (e) {
          const err = ConnectError.from(e);
          return {
            startedAt: started,
            endedAt: performance.now(),
            ms: performance.now() - started,
            code: Code[err.code]!,
            pushback: err.metadata.has("grpc-retry-pushback-ms") || err.metadata.has("retry-after"),
          };
        }
      });

      // Live metrics DURING the slowdown: every bulkhead above orders stays below its limit.
      const overfull: string[] = [];
      const peaks: Record<string, string> = {};
      // The bulkhead nearest the fault: orders' for pricing. Once the calls in its slots are
      // overdue and pricing says it waits out no restart, it sheds what queued behind them: counted
      // by reason, not sampled (the shedding takes a fraction of a second).
      const ordersStallRefusals = async () =>
        metricValue(await p.metrics("orders"), "bulkhead_rejected_total", { dependency: "pricing", class: "GetPrices", reason: "expected_wait" });
      const stallRefusalsBefore = await ordersStallRefusals();
      let samples = 0;
      const sampleTimes: { startedAt: number; endedAt: number }[] = [];
      const sampler = (async () => {
        while (!stop) {
          const startedAt = performance.now();
          for (const service of ["gateway", "checkout"] as const) {
            const text = await p.metrics(service);
            for (const b of bulkheads(text)) {
              const key = `${service}->${b.key}`;
              if (b.inUse >= b.limit) overfull.push(`${key} ${b.inUse}/${b.limit}`);
              const [peak] = (peaks[key] ?? "0/0").split("/").map(Number);
              if (b.inUse >= peak!) peaks[key] = `${b.inUse}/${b.limit}`;
            }
          }
          samples++;
          sampleTimes.push({ startedAt, endedAt: performance.now() });
          await new Promise((r) => setTimeout(r, 100));
        }
      })();

      const placed = await Promise.all(places);
      // Pricing stays locked until the timeouts have fed its limit in orders (the event, not a fixed
      // 1.5 s as before); a limit that never shrinks fails here after 10 s, naming it, as the assert below would.
      let limitDuring = await pricingLimit();
      await eventually(
        async () => (limitDuring = await pricingLimit()) < limitBefore,
        `pricing's adaptive limit in orders shrinks below ${limitBefore} while its table is locked`,
        200,
        50,
      );
      const readBreakers = ["gateway", "checkout"].map(async (s) => {
        const text = await p.metrics(s as "gateway" | "checkout");
        return metricValue(text, "circuit_breaker_state", { method: "GetOrder" });
      });
      const getOrderBreakers = await Promise.all(readBreakers);
      stop = true;
      await Promise.all([getLoop, sampler]);
      const got = gets;

      const refused = placed.filter((x) => x.code === "Unavailable");
      const timedOut = placed.filter((x) => x.code === "DeadlineExceeded");
      console.log(
        `[isolation] GetOrder ${got.filter((g) => g.ok).length}/${got.length} ok; PlaceOrder: ${refused.length} refused (median ${median(refused.map((x) => x.ms)).toFixed(0)} ms ` +
          `= ${(median(refused.map((x) => x.ms)) / deadlineMs).toFixed(3)} x deadline), ${timedOut.length} ran into the lock until their deadline, ` +
          `${placed.filter((x) => x.code === "ok").length} ok; pricing's limit in orders ${limitBefore} -> ${limitDuring}; ` +
          `peak in-use/limit above orders (${samples} samples): ${JSON.stringify(peaks)}`,
      );

      assert.deepEqual(
        got.filter((g) => !g.ok).map((g) => g.code),
        [],
        "every GetOrder succeeded during the slowdown",
      );
      assert.equal(placed.filter((x) => x.code === "ok").length, 0, "no PlaceOrder succeeded: pricing's table is locked");
      assert.deepEqual(
        [...new Set(placed.map((x) => x.code))].filter((c) => c !== "Unavailable" && c !== "DeadlineExceeded"),
        [],
        "PlaceOrder either waited in one of pricing's slots or was refused as unavailable",
      );
      // Only what pricing's slots in orders hold waits for the lock (the
      // shipped defaults): once those calls are overdue, pricing says it is
      // not waiting out a restart, so the stall is confirmed and every call
      // queued behind them, or arriving, is refused (resilience's bulkhead.ts).
      const ordersToPricing = loadOrdersConfig({ DATABASE_URL: "postgres://orders@127.0.0.1/platform" }).pricing.isolation;
      const held = ordersToPricing.maxConcurrent;
      assert.ok(timedOut.length <= held, `${timedOut.length} PlaceOrders waited for the lock (pricing's slots in orders: ${held})`);
      assert.ok(refused.length >= placed.length - held, `${refused.length} refused`);
      // Half the deadline separates "refused at once" from "waited out the deadline" (those end at
      // the deadline or later). Not a quarter: a refusal crosses three processes, and beside three
      // other test files on 2 cores their scheduling alone took the median to 1.5 s (load 20-50).
      assert.ok(median(refused.map((x) => x.ms)) < deadlineMs / 2, "refused in well under the deadline");
      assert.deepEqual(refused.filter((x) => !x.pushback).length, 0, "every refusal tells the caller when to come back");
      // Guards "reads keep being served while writes are stuck": while each PlaceOrder held in
      // pricing's slots waited (until its deadline), every reader was answered, and the metrics were
      // read. (Counted as "at least 40 GetOrders" before: 28 on a loaded machine, the count is its speed.)
      const heldWindows = (
        timedOut.length > 0 ? timedOut : [{ startedAt: Math.min(...placed.map((x) => x.startedAt)), endedAt: Math.max(...placed.map((x) => x.endedAt)) }]
      ).map((x) => ({ from: x.startedAt, to: x.endedAt }));
      const within = (w: { from: number; to: number }, x: { startedAt: number; endedAt: number }) => x.startedAt >= w.from && x.endedAt <= w.to;
      assert.deepEqual(
        heldWindows
          .map((w) => ({
            w,
            readers: new Set(got.filter((g) => g.ok && within(w, g)).map((g) => g.reader)).size,
            samples: sampleTimes.filter((x) => within(w, x)).length,
          }))
          .filter((x) => x.readers < 4 || x.samples < 1)
          .map((x) => `held ${Math.round(x.w.to - x.w.from)} ms: ${x.readers} of 4 readers answered, ${x.samples} metric samples`),
        [],
        `GetOrders kept being served (${got.length} in all) and the metrics read (${samples} times) while PlaceOrders were held`,
      );
      // Guards "a slow pricing fills only its own slots": read while the PlaceOrders were held (the
      // samples saw them in flight above orders), no bulkhead of the gateway or checkout was full.
      const peakInUse = (key: string) => Number((peaks[key] ?? "0/0").split("/")[0]);
      assert.ok(peakInUse("checkout->orders/CreateOrder") > 0, `the samples saw PlaceOrders in flight above orders: ${JSON.stringify(peaks)}`);
      assert.deepEqual(overfull, [], "no bulkhead of the gateway or checkout filled");
      // The breaker nearest the fault may stay closed: only the calls in pricing's slots fail
      // (fewer than BREAKER_VOLUME_THRESHOLD), and the refusals of the stall are the bulkhead's own,
      // which breakers never count. The stall shedding is what bounds the waiters here.
      assert.ok((await ordersStallRefusals()) > stallRefusalsBefore, "orders' bulkhead for pricing shed calls for the stall");
      assert.deepEqual(getOrderBreakers, [0, 0], "GetOrder's breakers stayed closed");
      assert.ok(limitDuring < limitBefore, `pricing's adaptive limit in orders shrank (${limitBefore} -> ${limitDuring})`);
    } finally {
      await locker.query("ROLLBACK").catch(() => {});
      await locker.end();
    }
    // Once the lock is gone, orders are placed again (after the breakers' trial).
    await eventually(
      async () => {
        try {
          await client.placeOrder({ customerId: `iso-after-${randomUUID()}`, items: [item] });
          return true;
        } catch {
          return false;
        }
      },
      "orders succeed again after the lock is released",
      100,
      250,
    );
  });
});

describe("a burst against a stalled pricing", () => {
  test("40 PlaceOrders at once while pricing's table is locked: no more wait for the lock than pricing's slots in orders; the rest are refused, with pushback, well before their deadline; GetOrder is served throughout", async () => {
    const client = p.client("grpc");
    const { order } = await client.placeOrder({ customerId: `iso-burst-warm-${randomUUID()}`, items: [item] }, { timeoutMs: 5000 });
    const slots = loadOrdersConfig({ DATABASE_URL: "postgres://orders@127.0.0.1/platform" }).pricing.isolation.maxConcurrent;
    const stallVerdicts = async () => metricValue(await p.metrics("orders"), "bulkhead_stall_verdicts_total", { dependency: "pricing", kind: "stall" });
    const stallVerdictsBefore = await stallVerdicts();
    const locker = new pg.Client({ connectionString: p.databaseUrl });
    await locker.connect();
    const deadlineMs = 5000;
    try {
      await locker.query("BEGIN");
      await locker.query("LOCK TABLE pricing.products IN ACCESS EXCLUSIVE MODE");
      const gets = Array.from({ length: 10 }, async (_, i) => {
        await new Promise((r) => setTimeout(r, i * 100));
        return client.getOrder({ orderId: order!.id }, { timeoutMs: deadlineMs }).then(
          () => "ok",
          (e: unknown) => ConnectError.from(e).message,
        );
      });
      const placed = await Promise.all(
        Array.from({ length: 40 }, async () => {
          const started = performance.now();
          try {
            await client.placeOrder({ customerId: `iso-burst-${randomUUID()}`, items: [item] }, { timeoutMs: deadlineMs });
            return { code: "ok", ms: performance.now() - started, pushback: false };
          } catch (e) {
            const err = ConnectError.from(e);
            return { code: Code[err.code]!, ms: performance.now() - started, pushback: err.metadata.has("grpc-retry-pushback-ms") };
          }
        }),
      );
      const waited = placed.filter((x) => x.code === "DeadlineExceeded");
      // Half the deadline tells "refused" from "waited out the deadline" (which ends at 5 s or
      // later), as in the test above: the stall is noticed after ten mean hold times and confirmed
      // by two answers from pricing, each crossing processes that share 2 cores with three other
      // test files. How soon on a quiet machine is measured from outside (docs/isolation.md).
      const refusedSoon = placed.filter((x) => x.code === "Unavailable" && x.ms < deadlineMs / 2);
      console.log(
        `[isolation burst] 40 PlaceOrders: ${refusedSoon.length} refused within ${deadlineMs / 2} ms (${refusedSoon.filter((x) => x.ms < 1000).length} within 1 s; median ${median(refusedSoon.map((x) => x.ms)).toFixed(0)} ms), ${waited.length} waited for the lock (pricing's slots: ${slots}); codes ${JSON.stringify(placed.map((x) => x.code).sort())}`,
      );
      assert.deepEqual(await Promise.all(gets), Array(10).fill("ok"), "GetOrder served every time");
      assert.ok(waited.length <= slots, `${waited.length} waited for the lock; pricing's slots in orders: ${slots}`);
      assert.ok(refusedSoon.length >= 40 - slots, `${refusedSoon.length} of 40 refused within half the deadline`);
      assert.ok(
        refusedSoon.every((x) => x.pushback),
        "every refusal tells the caller when to come back",
      );
      assert.ok((await stallVerdicts()) > stallVerdictsBefore, "orders counted the stall it shed the queue for (bulkhead_stall_verdicts_total)");
    } finally {
      await locker.query("ROLLBACK").catch(() => {});
      await locker.end();
    }
  });
});

describe("pricing failing every call", () => {
  test("orders' breaker opens after the minimum volume, stops calling pricing, and closes after recovery; the breakers above orders never open", async () => {
    // The previous test may have left breakers on the PlaceOrder path open
    // or half-open: placing orders drives their trials until they close.
    let existing: { id: string } | undefined;
    await eventually(
      async () => {
        try {
          existing = (await p.client("grpc").placeOrder({ customerId: `brk-before-${randomUUID()}`, items: [item] })).order;
        } catch {
          return false;
        }
        return metricValue(await p.metrics("orders"), "circuit_breaker_state", { dependency: "pricing", method: "GetPrices" }) === 0;
      },
      "an order can be placed before the outage, and orders' breaker for pricing is closed",
      100,
      250,
    );
    // The breaker is closed here (just read) and nothing fails before the fault: it opens after this.
    let closedAt = performance.now();
    await setServiceFaults(p, "pricing", { db: { errorRate: 1 } });
    const calls = async () => metricValue(await p.metrics("pricing"), "rpc_server_requests_total", { procedure: "/pricing.v1.PricingService/GetPrices" });
    const ordersBreaker = async () => metricValue(await p.metrics("orders"), "circuit_breaker_state", { dependency: "pricing", method: "GetPrices" });
    // The breakers above orders: checkout's for orders and the gateway's for checkout. Every call
    // below goes through them, and none may open: orders and checkout answer at once, reporting
    // pricing's failure marked as pricing's (x-failed-dependency), which only orders' breaker counts.
    // (Before that mark they counted it too, opened with orders', and each hop's trial after the
    // fault met the breaker below it still open: stacked breakers, docs/architecture.md.)
    const upperOpenings = async () =>
      metricValue(await p.metrics("checkout"), "circuit_breaker_transitions_total", { dependency: "orders", to: "open" }) +
      metricValue(await p.metrics("gateway"), "circuit_breaker_transitions_total", { dependency: "checkout", to: "open" });
    const upperOpeningsBefore = await upperOpenings();
    const client = p.client("grpc");
    const breaker = loadOrdersConfig({ DATABASE_URL: "postgres://orders@127.0.0.1/platform" }).pricing.isolation.breaker;
    let circuitOpenMessages = 0;
    const marks = new Set<string | null>();
    const placeFailing = async (tag: string) => {
      try {
        // A deadline shorter than an open breaker's pushback: the gateway does not wait to retry.
        await client.placeOrder({ customerId: `brk-${tag}-${randomUUID()}`, items: [item] }, { timeoutMs: 2000 });
        assert.fail("no order can be placed while pricing fails");
      } catch (e) {
        const err = ConnectError.from(e);
        assert.equal(Code[err.code], "Unavailable", err.rawMessage);
        if (/circuit open/.test(err.rawMessage)) circuitOpenMessages++;
        marks.add(err.metadata.get("x-failed-dependency"));
      }
    };
    // Phase 1: failing calls until orders' breaker for pricing opens (it needs its minimum volume).
    const before = await calls();
    let sent = 0;
    for (;;) {
      const checkedAt = performance.now();
      if ((await ordersBreaker()) === 2 || sent >= 3 * breaker.volumeThreshold) break;
      closedAt = checkedAt;
      await placeFailing(`open-${sent}`);
      sent++;
    }
    const reachedWhileClosed = (await calls()) - before;
    assert.equal(await ordersBreaker(), 2, `orders' breaker opened within ${sent} calls`);
    // Phase 2, the behaviour the breaker exists for: once open, calls no longer reach pricing
    // at all (but for the one half-open trial per reset period the breaker has been open for). Its
    // reset timer runs from when it opened, which was after the last check that saw it closed, not
    // from this phase's start: on a loaded machine the phase plus the time since that check can pass
    // the reset period when the phase alone does not (a trial then reached pricing, allowed 0).
    const n = 20;
    const openAt = await calls();
    const phaseStarted = performance.now();
    for (let i = 0; i < n; i++) await placeFailing(`while-open-${i}`);
    const phaseEnded = performance.now();
    const elapsed = phaseEnded - phaseStarted;
    const reachedWhileOpen = (await calls()) - openAt;
    const trialsAllowed = trialsWithin(phaseEnded - closedAt, breaker);
    const orders = await p.metrics("orders");
    console.log(
      `[breaker] ${sent} orders through the gateway opened it (${reachedWhileClosed} calls reached pricing); then ${n} orders in ${Math.round(elapsed)} ms: ` +
        `${reachedWhileOpen} reached pricing (${trialsAllowed} trials allowed: open at most ${Math.round(phaseEnded - closedAt)} ms); ${circuitOpenMessages} answered "circuit open"`,
    );
    assert.ok(
      reachedWhileOpen <= trialsAllowed,
      `${reachedWhileOpen} calls reached pricing while the breaker was open (half-open trials allowed: ${trialsAllowed})`,
    );
    assert.ok(metricValue(orders, "circuit_breaker_rejected_total", { dependency: "pricing" }) > 0);
    assert.ok(circuitOpenMessages > 0, "callers are told the circuit is open, naming the dependency");
    assert.deepEqual([...marks], ["pricing"], "every failure reached the caller marked as pricing's");
    assert.equal((await upperOpenings()) - upperOpeningsBefore, 0, "no breaker above orders opened");
    // Reading an order never needs pricing: it keeps working during the outage.
    const read = await client.getOrder({ orderId: existing!.id });
    assert.equal(read.order?.id, existing!.id);

    await setServiceFaults(p, "pricing", {});
    await eventually(
      async () => {
        try {
          await client.placeOrder({ customerId: `brk-recover-${randomUUID()}`, items: [item] });
          return true;
        } catch {
          return false;
        }
      },
      "orders succeed again after recovery",
      100,
      250,
    );
    assert.equal(metricValue(await p.metrics("orders"), "circuit_breaker_state", { dependency: "pricing", method: "GetPrices" }), 0, "closed again");
  });
});

/** Half-open trials an open breaker may have let through in `ms`: its waits start at firstResetMs and double up to resetTimeoutMs (circuit-breaker.ts). */
function trialsWithin(ms: number, breaker: { resetTimeoutMs: number; firstResetMs?: number }): number {
  let trials = 0;
  let wait = breaker.firstResetMs ?? breaker.resetTimeoutMs;
  for (let at = wait; at <= ms; at += wait) {
    trials++;
    wait = Math.min(wait * 2, breaker.resetTimeoutMs);
  }
  return trials;
}
