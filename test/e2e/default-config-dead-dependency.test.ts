/**
 * The platform exactly as shipped (no resilience variable set; only fault
 * injection enabled, as every test that injects faults does), with its
 * dependency dead: pricing frozen with SIGSTOP for 3 s under a load of
 * orders. The contract, as in default-config.test.ts (the same shipped
 * configuration under a slow database and overload): every call succeeds
 * or fails with a clear, retryable code within its deadline (plus slack
 * against hangs: the freeze outlasts deadline + slack, so a caller left
 * waiting on pricing would be late), every acknowledged order stored once,
 * recovery with no help; and the requests that reached the frozen process
 * cost at most one database transaction each once it runs again.
 *
 * Beside the other files, not alone: its bounds are a deadline plus 2 s
 * and a count of transactions, not a share of the machine (it passed at
 * load 23 to 29 beside other sessions, once with a one-core burn too;
 * docs/testing.md).
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type pg from "pg";
import { eventually, metricValue, startTestPlatform, withFreshConnection, type TestPlatform } from "@platform/test-support";
import { OrderLoad, histogram, lateCalls, reconcile, sleep, unexpected, type CallRecord } from "../hardening/order-load.js";
import { allowed, resolvers, settleSlackMs } from "./shipped-config-bounds.js";

let p: TestPlatform;
before(async () => {
  p = await startTestPlatform({ faultInjection: true });
});
after(async () => {
  await p?.close();
});

const withDb = <T>(fn: (db: pg.Client) => Promise<T>): Promise<T> => withFreshConnection(p.databaseUrl, fn);

describe("the shipped configuration under a fault", () => {
  test("a dead dependency (pricing frozen with SIGSTOP for 3 s): callers answered in time, no duplicates, recovery; the stale requests cost at most one transaction each", async () => {
    const pricing = p.services.pricing.process;
    const timeoutMs = 1000;
    const load = new OrderLoad(p, { tag: "defdead", workers: 8, timeoutMs });
    let resumedAt = 0;
    try {
      await eventually(() => load.successesSince(0) >= 10, "orders flow before the fault", 300, 100);
      pricing.kill("SIGSTOP");
      try {
        await sleep(3000);
      } finally {
        pricing.kill("SIGCONT");
      }
      resumedAt = performance.now();
      await eventually(() => load.successesSince(resumedAt) >= 10, "orders succeed again once pricing runs, with no help", 300, 100);
    } finally {
      pricing.kill("SIGCONT");
      await load.stop();
    }
    const resolved = await load.resolveUncertain(20, resolvers);
    console.log(
      `[default dead dependency] ${load.calls.length} calls ${histogram(load.calls)}; ${load.orders.length} logical orders, ${resolved} resolved by asking again`,
    );
    assert.deepEqual(unexpected(load.calls, allowed), [], "only clear, retryable failures");
    assert.deepEqual(lateCalls(load.calls, settleSlackMs), [], "every call settled within its deadline, though pricing never answered");
    assert.deepEqual(await withDb((db) => reconcile(db, load)), [], "every acknowledged order stored once, nothing else");

    // The requests that reached a frozen pricing: their callers have gone by the time it runs
    // again, so it must do no database work for them. Quiet platform, then a few calls that
    // can only wait; pricing's database transactions are counted before it stops and after it resumes.
    const transactions = async () => metricValue(await p.metrics("pricing"), "db_transactions_total", { db: "pricing-db" });
    const before = await transactions();
    pricing.kill("SIGSTOP");
    let stale: CallRecord[];
    try {
      const quiet = new OrderLoad(p, { tag: "defstale", workers: 4, timeoutMs: 800, maxAttempts: 1 });
      await sleep(1500);
      await quiet.stop();
      stale = quiet.calls;
    } finally {
      pricing.kill("SIGCONT");
    }
    await sleep(1000); // pricing reads what waited in its sockets
    const after = await transactions();
    console.log(
      `[default dead dependency] ${stale.length} calls while frozen ${histogram(stale)}; pricing transactions for them after it resumed: ${after - before}`,
    );
    assert.ok(stale.length >= 4, "calls were made while pricing was frozen");
    assert.deepEqual(
      stale.filter((c) => c.code === "ok").map((c) => c.protocol),
      [],
      "none succeeded while pricing was frozen",
    );
    // Known gap, measured here: a frozen process cannot tell, once it runs again, that a request
    // waited in its socket past its caller's deadline (grpc-timeout is relative to when it was sent),
    // so pricing still ran one transaction per stale request (8 of 8 in the run that found it).
    // What holds, and is guarded: nothing multiplies that work (no retry below the edge), and each
    // statement is cut at the deadline the request carries.
    assert.ok(after - before <= stale.length, `at most one database transaction per stale request (${after - before} for ${stale.length})`);
  });
});
