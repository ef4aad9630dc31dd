/**
 * Restarts under load, on real processes and PostgreSQL:
 * (a) PostgreSQL stopped ("fast", then "immediate") and started again on
 *     the same data directory and port;
 * (b) an internal service killed with SIGKILL mid-traffic;
 * (c) each service stopped with SIGTERM mid-traffic.
 * Each time the platform must recover by itself, every caller must get an
 * answer (success or a clear, retryable error) within its own deadline,
 * and the database must hold every acknowledged order exactly once, whole.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import type pg from "pg";
import { startEmbeddedPostgres, type EmbeddedPostgres, type StopMode } from "@platform/embedded-postgres";
import { eventually, setServiceFaults, startTestPlatform, withFreshConnection, type TestPlatform } from "@platform/test-support";
import { OrderLoad, histogram, lateCalls, reconcile, sleep, unexpected, type CallRecord } from "./order-load.js";

const drainTimeoutMs = 2000;
/** How long each handler of the service being stopped takes: what keeps calls in flight when SIGTERM arrives. */
const slowHandlerMs = 300;
/** A call must settle within its deadline plus this: a bound against hangs, not a speed claim. */
const settleSlackMs = 2000;
const services = ["pricing", "orders", "checkout", "gateway"] as const;

let p: TestPlatform;
/** The PostgreSQL started by this test after a restart (the platform holds the first one). */
let restartedPg: EmbeddedPostgres | undefined;
/** The launcher's progress lines (exits and restarts of services), with when they came. */
const progress: { at: number; line: string }[] = [];

before(async () => {
  p = await startTestPlatform({
    faultInjection: true,
    env: { LOG_LEVEL: "warn", DRAIN_TIMEOUT_MS: String(drainTimeoutMs) },
    onProgress: (line) => progress.push({ at: performance.now(), line }),
  });
});
after(async () => {
  await p?.stop(); // services first, then the platform's own (already stopped) database
  await restartedPg?.stop("fast");
  await p?.close();
});

/** A fresh superuser connection per use: the database restarts under us. */
const withDb = <T>(fn: (db: pg.Client) => Promise<T>): Promise<T> => withFreshConnection(p.databaseUrl, fn);

/** Failures a caller may see while a dependency is down or restarting: clear and retryable. */
const outageCodes = new Set<CallRecord["code"]>(["ok", Code.Unavailable, Code.DeadlineExceeded, Code.ResourceExhausted]);

describe("PostgreSQL restarted under steady load", () => {
  for (const mode of ["fast", "immediate"] as StopMode[]) {
    test(`stop("${mode}") then start on the same data and port: the platform recovers by itself, no acknowledged order lost or doubled`, async () => {
      const load = new OrderLoad(p, { tag: `pg${mode}`, workers: 4, timeoutMs: 2000 });
      let downAt = 0;
      let upAt = 0;
      try {
        await eventually(() => load.successesSince(0) >= 20, "orders flow before the restart", 300, 100);
        const current = restartedPg ?? p.postgres;
        assert.ok(current, "the platform runs the embedded database");
        const { dataDir, port } = current;
        downAt = performance.now();
        await current.stop(mode);
        await sleep(1500); // with the start, about 2 s without a database
        restartedPg = await startEmbeddedPostgres({ dataDir, port });
        upAt = performance.now();
        await eventually(() => load.successesSince(upAt) >= 10, "orders succeed again after the restart, with no help", 400, 100);
      } finally {
        await load.stop();
      }
      const firstOkAfter = Math.min(...load.calls.filter((c) => c.code === "ok" && c.startedAt >= upAt).map((c) => c.settledAt));
      const resolved = await load.resolveUncertain();
      const outage = load.calls.filter((c) => c.settledAt >= downAt && c.startedAt <= upAt);
      console.log(
        `[pg ${mode}] database down ${Math.round(upAt - downAt)} ms; first new order ok ${Math.round(firstOkAfter - upAt)} ms after it was back; ` +
          `${load.calls.length} calls ${histogram(load.calls)}; during the outage ${histogram(outage)}; ` +
          `${load.orders.length} logical orders, ${resolved} resolved by asking again`,
      );
      assert.deepEqual(lateCalls(load.calls, settleSlackMs), [], "every call settled within its deadline");
      assert.deepEqual(unexpected(load.calls, outageCodes), [], "only clear, retryable failures");
      assert.equal(load.orders.filter((o) => o.orderId === undefined).length, 0, "every logical order got an answer in the end");
      assert.deepEqual(await withDb((db) => reconcile(db, load)), []);
    });
  }
});

describe("an internal service killed with SIGKILL mid-traffic", () => {
  test("orders: callers get UNAVAILABLE or DEADLINE_EXCEEDED in time, the supervisor restarts it, service resumes, nothing half-written", async () => {
    const orders = p.services.orders.process;
    const restartsBefore = orders.restarts;
    const load = new OrderLoad(p, { tag: "sigkill", workers: 4, timeoutMs: 1500 });
    let killedAt = 0;
    let readyAt = 0;
    try {
      await eventually(() => load.successesSince(0) >= 20, "orders flow before the kill", 300, 100);
      killedAt = performance.now();
      orders.kill("SIGKILL");
      await eventually(() => orders.restarts === restartsBefore + 1 && orders.ready, "the supervisor restarted orders and it serves", 600, 50);
      readyAt = performance.now();
      await eventually(() => load.successesSince(readyAt) >= 10, "orders succeed again, with no help", 400, 100);
    } finally {
      await load.stop();
    }
    const exit = progress.find((e) => e.at >= killedAt && e.line.startsWith("orders exited"));
    const window = load.calls.filter((c) => c.settledAt >= killedAt && c.startedAt <= readyAt);
    const resolved = await load.resolveUncertain();
    console.log(
      `[sigkill] ${exit?.line ?? "no exit line"}; ready again ${Math.round(readyAt - killedAt)} ms after the kill; ` +
        `calls meanwhile ${histogram(window)}; ${load.orders.length} logical orders, ${resolved} resolved by asking again`,
    );
    assert.match(exit?.line ?? "", /^orders exited \(SIGKILL\); restarting in \d+ ms/);
    assert.deepEqual(lateCalls(load.calls, settleSlackMs), [], "every call settled within its deadline");
    assert.deepEqual(unexpected(window, new Set(["ok", Code.Unavailable, Code.DeadlineExceeded])), [], "only UNAVAILABLE or DEADLINE_EXCEEDED meanwhile");
    assert.deepEqual(unexpected(load.calls, outageCodes), []);
    const halfWritten = await withDb(
      async (db) => (await db.query("SELECT o.id FROM orders.orders o LEFT JOIN orders.order_items i ON i.order_id = o.id WHERE i.order_id IS NULL")).rows,
    );
    assert.deepEqual(halfWritten, [], "no order without its items");
    assert.deepEqual(await withDb((db) => reconcile(db, load)), []);
  });
});

describe("SIGTERM to each service under load", () => {
  for (const name of services) {
    test(`${name}: in-flight calls finish or fail retryably, new ones are refused cleanly, it exits within its drain bound and is restarted`, async () => {
      const proc = p.services[name].process;
      const restartsBefore = proc.restarts;
      // Slow handlers keep calls in flight when the signal arrives (the restarted process has no faults).
      await setServiceFaults(p, name, { handler: { latencyMs: slowHandlerMs } });
      const load = new OrderLoad(p, { tag: `sigterm${name}`, workers: 4, timeoutMs: 3000 });
      let signalAt = 0;
      let readyAt = 0;
      try {
        await eventually(() => load.successesSince(0) >= 8, `orders flow through a slow ${name}`, 300, 100);
        signalAt = performance.now();
        proc.kill("SIGTERM");
        await eventually(() => progress.some((e) => e.at >= signalAt && e.line.startsWith(`${name} exited`)), `${name} exits`, 300, 50);
        await eventually(() => proc.restarts === restartsBefore + 1 && proc.ready, `the supervisor restarted ${name} and it serves`, 600, 50);
        readyAt = performance.now();
        await eventually(() => load.successesSince(readyAt) >= 5, "orders succeed again, with no help", 400, 100);
      } finally {
        await load.stop();
      }
      const exit = progress.find((e) => e.at >= signalAt && e.line.startsWith(`${name} exited`))!;
      const inFlight = load.calls.filter((c) => c.startedAt < signalAt && c.settledAt > signalAt);
      const window = load.calls.filter((c) => c.settledAt >= signalAt && c.startedAt <= readyAt);
      const resolved = await load.resolveUncertain();
      console.log(
        `[sigterm ${name}] ${exit.line} ${Math.round(exit.at - signalAt)} ms after the signal (drain bound ${drainTimeoutMs} ms); ` +
          `ready again after ${Math.round(readyAt - signalAt)} ms; in flight at the signal ${histogram(inFlight)}; ` +
          `until ready ${histogram(window)}; ${resolved} resolved by asking again`,
      );
      // A graceful exit (0), restarted since the platform did not ask it to stop (compose: restart: unless-stopped).
      assert.match(exit.line, new RegExp(`^${name} exited \\(0\\); restarting in \\d+ ms`));
      // Guards the drain bound: the process is gone within the configured drain time plus one request's
      // time (every handler here takes slowHandlerMs), whether its calls finished early or the drain ran out.
      assert.ok(
        exit.at - signalAt <= drainTimeoutMs + slowHandlerMs,
        `exited ${Math.round(exit.at - signalAt)} ms after SIGTERM (drain ${drainTimeoutMs} ms + one request ${slowHandlerMs} ms)`,
      );
      assert.deepEqual(unexpected(inFlight, new Set(["ok", Code.Unavailable])), [], "in-flight calls complete or fail with UNAVAILABLE");
      assert.deepEqual(unexpected(window, outageCodes), [], "new calls are refused cleanly");
      assert.deepEqual(lateCalls(load.calls, settleSlackMs), [], "every call settled within its deadline");
      assert.deepEqual(await withDb((db) => reconcile(db, load)), []);
    });
  }
});
