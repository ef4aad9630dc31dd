/**
 * The platform exactly as shipped, every mechanism on (no resilience
 * variable is set here: breakers, bulkheads, adaptive limits, admission,
 * the intake controller and the retry budget all run with their defaults),
 * under one fault of each kind: a slow database, a dead dependency, and
 * overload. Each test asserts the user-visible contract only:
 * - codes: every call succeeds or fails with a clear, retryable code;
 * - no duplicate orders: the database holds every acknowledged order once;
 * - no work past the deadline: callers are answered within their deadline
 *   (plus slack against hangs), and statements stop at it (for requests that
 *   waited inside a frozen process, see the known gap in the dead-dependency test);
 * - recovery: once the fault is gone, orders succeed again with no help.
 * The other end-to-end tests switch mechanisms off to see one at a time;
 * this file is where the shipped combination is held to the contract.
 */
// npm test: alone (its overload is 256 clients beyond what 2 cores serve; its bounds assume no other load)
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import type pg from "pg";
import { eventually, metricValue, setServiceFaults, startTestPlatform, withFreshConnection, type TestPlatform } from "@platform/test-support";
import { OrderLoad, histogram, lateCalls, reconcile, sleep, unexpected, type CallRecord } from "../hardening/order-load.js";
import { watchStatements } from "../../packages/database/src/testing/statement-watch.js";

let p: TestPlatform;
before(async () => {
  p = await startTestPlatform({ faultInjection: true });
});
after(async () => {
  await p?.close();
});

/** A call must settle within its deadline plus this: a bound against hangs, not a speed claim. */
const settleSlackMs = 2000;
/** How long after its deadline a statement may still be seen running on the server (the timer firing, the cancel's round trip). */
const cancelGraceMs = 400;
/** What a caller may see while a dependency is slow, dead or overloaded: clear and retryable. */
const allowed = new Set<CallRecord["code"]>(["ok", Code.Unavailable, Code.DeadlineExceeded, Code.ResourceExhausted]);

const withDb = <T>(fn: (db: pg.Client) => Promise<T>): Promise<T> => withFreshConnection(p.databaseUrl, fn);

describe("the shipped configuration under a fault", () => {
  test("a slow database (pricing's statements take 3 s, callers allow 1 s): clear codes, statements cut at the deadline, no duplicates, recovery", async () => {
    const timeoutMs = 1000;
    const load = new OrderLoad(p, { tag: "defslow", workers: 8, timeoutMs });
    const watch = watchStatements(p.databaseUrl, { applicationName: "pricing", queryContains: "pg_sleep" });
    let clearedAt = 0;
    try {
      await eventually(() => load.successesSince(0) >= 10, "orders flow before the fault", 300, 100);
      await setServiceFaults(p, "pricing", { db: { latencyMs: 3000 } });
      await sleep(4000);
      await setServiceFaults(p, "pricing", {});
      clearedAt = performance.now();
      await eventually(() => load.successesSince(clearedAt) >= 10, "orders succeed again once the database is fast, with no help", 300, 100);
    } finally {
      await load.stop();
    }
    const statements = await watch.stop();
    const resolved = await load.resolveUncertain();
    const longest = Math.max(...statements.map((s) => s.ranAtMostMs ?? Infinity));
    console.log(
      `[default slow db] ${load.calls.length} calls ${histogram(load.calls)}; ${statements.length} slow statements seen, the longest ran at most ${Math.round(longest)} ms; ` +
        `${load.orders.length} logical orders, ${resolved} resolved by asking again`,
    );
    assert.deepEqual(unexpected(load.calls, allowed), [], "only clear, retryable failures");
    assert.deepEqual(lateCalls(load.calls, settleSlackMs), [], "every call settled within its deadline");
    // No work past the deadline: each slow statement is gone from the server (by its clock)
    // within the caller's deadline (the statement started after the caller did) plus a grace.
    assert.ok(statements.length >= 1, "slow statements reached the database (the fault was in force)");
    assert.deepEqual(
      statements
        .filter((s) => s.ranAtMostMs === undefined || s.ranAtLeastMs > timeoutMs + cancelGraceMs)
        .map((s) => `pid ${s.pid}: ${s.ranAtMostMs === undefined ? "never ended" : `still running after ${Math.round(s.ranAtLeastMs)} ms`}`),
      [],
      `every slow statement was gone within ${timeoutMs} + ${cancelGraceMs} ms (the last poll that saw it: the watcher's interval, longer on a loaded machine, is not held against it)`,
    );
    assert.deepEqual(await withDb((db) => reconcile(db, load)), [], "every acknowledged order stored once, nothing else");
  });

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
    const resolved = await load.resolveUncertain();
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

  test("overload (256 clients with no pause, far beyond what 2 cores serve): clear codes with refusals, no duplicates, intake back to normal, recovery", async () => {
    const timeoutMs = 1500;
    const load = new OrderLoad(p, { tag: "defover", workers: 256, timeoutMs, pauseMs: 0 });
    let stoppedAt = 0;
    try {
      await sleep(5000);
    } finally {
      await load.stop();
      stoppedAt = performance.now();
    }
    // Normal traffic again: the intake controller readmits it step by step (it judges on the
    // requests it sees, one step per 2 s: 8 steps from a cut to 20 %) until it is back to normal.
    const intakeNormal = async () => metricValue(await p.metrics("gateway"), "intake_state", { state: "normal" }) === 1;
    const calm = new OrderLoad(p, { tag: "defcalm", workers: 2, timeoutMs });
    try {
      await eventually(() => calm.successesSince(stoppedAt) >= 10, "orders succeed after the overload, with no help", 300, 100);
      await eventually(intakeNormal, "the intake controller is back to normal under normal traffic", 600, 100);
    } finally {
      await calm.stop();
    }
    const intakeStates = await p.metrics("gateway");
    const resolved = await load.resolveUncertain();
    const refused = load.calls.filter((c) => c.code === Code.ResourceExhausted || c.code === Code.Unavailable);
    const ok = load.calls.filter((c) => c.code === "ok");
    const cuts = metricValue(intakeStates, "intake_transitions_total", { to: "cut" });
    console.log(
      `[default overload] ${load.calls.length} calls ${histogram(load.calls)}; intake cut ${cuts} times; ${load.orders.length} logical orders, ${resolved} resolved by asking again`,
    );
    assert.deepEqual(unexpected(load.calls, allowed), [], "only clear, retryable failures");
    assert.deepEqual(lateCalls(load.calls, settleSlackMs), [], "every call settled within its deadline");
    assert.ok(refused.length > 0, "the excess was refused ('not now'), not queued without bound");
    assert.ok(ok.length > 0, "the platform kept serving while overloaded");
    assert.deepEqual(await withDb((db) => reconcile(db, load)), [], "every acknowledged order stored once, nothing else");
    assert.deepEqual(await withDb((db) => reconcile(db, calm)), []);
  });
});
