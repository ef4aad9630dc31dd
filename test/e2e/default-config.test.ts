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
 * this file is where the shipped combination is held to the contract. The
 * dead dependency is default-config-dead-dependency.test.ts: its bounds
 * (a deadline plus 2 s, a count of transactions) hold beside other files,
 * so it runs in the parallel phase.
 */
// npm test: alone (its overload is 256 clients beyond what 2 cores serve; its bounds (refusals seen, a statement gone within 400 ms of its deadline) assume no other load)
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import type pg from "pg";
import { eventually, metricValue, setServiceFaults, startTestPlatform, withFreshConnection, type TestPlatform } from "@platform/test-support";
import { OrderLoad, histogram, lateCalls, reconcile, sleep, unexpected } from "../hardening/order-load.js";
import { allowed, resolvers, settleSlackMs } from "./shipped-config-bounds.js";
import { watchStatements } from "../../packages/database/src/testing/statement-watch.js";

let p: TestPlatform;
before(async () => {
  p = await startTestPlatform({ faultInjection: true });
});
after(async () => {
  await p?.close();
});

/** How long after its deadline a statement may still be seen running on the server (the timer firing, the cancel's round trip). */
const cancelGraceMs = 400;

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
      // Long enough for every worker to meet the fault twice (1 s deadlines); a call that waited for a
      // whole 3 s statement would settle past its deadline + slack wherever in the window it started.
      await sleep(2500);
      await setServiceFaults(p, "pricing", {});
      clearedAt = performance.now();
      await eventually(() => load.successesSince(clearedAt) >= 10, "orders succeed again once the database is fast, with no help", 300, 100);
    } finally {
      await load.stop();
    }
    const statements = await watch.stop();
    const resolved = await load.resolveUncertain(20, resolvers);
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
    const resolved = await load.resolveUncertain(20, resolvers);
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
