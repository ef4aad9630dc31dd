import assert from "node:assert/strict";
import { describe, it, type TestContext } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import { type CircuitBreakerEvent, type CircuitBreakerOptions, CircuitBreaker, isDependencyFailure } from "./circuit-breaker.js";
import { failedDependencyHeader } from "./failed-dependency.js";
import { localRejection, markLocalRejection } from "./local-rejection.js";

/**
 * opossum's reset timer (open -> half-open) is a real setTimeout, and the
 * breaker's clock reads Date.now(): node:test's mock timers drive both, so
 * nothing sleeps.
 */
function setup(t: TestContext, overrides: Partial<CircuitBreakerOptions> = {}) {
  t.mock.timers.enable({ apis: ["setTimeout", "setInterval", "Date"], now: 1_000_000 });
  const events: CircuitBreakerEvent[] = [];
  const breaker = new CircuitBreaker({ name: "stock", clock: { now: () => Date.now() }, ...overrides });
  breaker.onEvent((e) => events.push(e));
  t.after(() => breaker.dispose());
  let calls = 0;
  const call = <T>(fn: () => Promise<T>) =>
    breaker.execute(() => {
      calls++;
      return fn();
    });
  const fail = (code = Code.Unavailable) => call(() => Promise.reject(new ConnectError("down", code))).catch((e: unknown) => e);
  const succeed = () => call(async () => "ok");
  return { breaker, events, calls: () => calls, call, fail, succeed, tick: (ms: number) => t.mock.timers.tick(ms) };
}

function transitions(events: CircuitBreakerEvent[]): string[] {
  return events.flatMap((e) => (e.type === "transition" ? [`${e.from}->${e.to}`] : []));
}

function assertOpenRejection(err: unknown, message: RegExp): void {
  assert.ok(err instanceof ConnectError, String(err));
  assert.equal(err.code, Code.Unavailable);
  assert.match(err.rawMessage, message);
  assert.equal(localRejection(err)?.kind, "circuit_open");
}

describe("CircuitBreaker", () => {
  it("does not open below the volume threshold, however many fail", async (t) => {
    const { breaker, fail } = setup(t);
    for (let i = 0; i < 9; i++) await fail();
    assert.equal(breaker.state(), "closed");
    await fail();
    assert.equal(breaker.state(), "open");
  });

  it("with default settings, one failure does not open it (opossum's own default would)", async (t) => {
    const { breaker, fail } = setup(t);
    await fail();
    assert.equal(breaker.state(), "closed");
  });

  it("opens when the failure rate exceeds the threshold, not at it", async (t) => {
    const { breaker, fail, succeed } = setup(t);
    for (let i = 0; i < 5; i++) await succeed();
    for (let i = 0; i < 5; i++) await fail();
    assert.equal(breaker.state(), "closed", "5 of 10 is not above 50%");
    await fail();
    assert.equal(breaker.state(), "open", "6 of 11 is");
  });

  it("rejects at once without calling fn while open, saying when the next trial is", async (t) => {
    const { breaker, fail, call, calls, tick } = setup(t);
    for (let i = 0; i < 10; i++) await fail();
    assert.equal(calls(), 10);
    const err = await call(async () => "never").catch((e: unknown) => e);
    assertOpenRejection(err, /^stock: circuit open, next trial in ~5s$/);
    assert.equal(localRejection(err)?.retryAfterMs, 5_000);
    tick(2_100);
    const later = await call(async () => "never").catch((e: unknown) => e);
    assertOpenRejection(later, /next trial in ~3s/);
    for (let i = 0; i < 20; i++) await call(async () => "never").catch(() => {});
    assert.equal(calls(), 10, "no rejected call reached fn");
    assert.equal(breaker.stats().rejected, 22);
  });

  it("does not count the caller's errors or local rejections", async (t) => {
    const { breaker, fail, call } = setup(t);
    const callerCodes = [
      Code.InvalidArgument,
      Code.NotFound,
      Code.AlreadyExists,
      Code.FailedPrecondition,
      Code.PermissionDenied,
      Code.Unauthenticated,
      Code.Canceled,
    ];
    for (let round = 0; round < 3; round++) for (const code of callerCodes) await fail(code);
    for (let i = 0; i < 10; i++) {
      await call(() =>
        Promise.reject(
          markLocalRejection(new ConnectError("stock: bulkhead full (4 in use, 8 queued)", Code.ResourceExhausted), {
            kind: "bulkhead_full",
            dependency: "stock",
          }),
        ),
      ).catch(() => {});
    }
    const abort = new DOMException("aborted", "AbortError");
    await call(() => Promise.reject(abort)).catch(() => {});
    assert.equal(breaker.state(), "closed");
    const s = breaker.stats();
    assert.equal(s.failures, 0);
    assert.equal(s.notCounted, 3 * callerCodes.length + 11);
  });

  it("counts the dependency's failures: UNAVAILABLE, INTERNAL, UNKNOWN, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, raw errors", async (t) => {
    const { breaker, fail, call } = setup(t, { volumeThreshold: 7 });
    for (const code of [Code.Unavailable, Code.Internal, Code.Unknown, Code.DeadlineExceeded, Code.ResourceExhausted]) await fail(code);
    await call(() => Promise.reject(new TypeError("fetch failed"))).catch(() => {});
    assert.equal(breaker.stats().failures, 6);
    assert.equal(breaker.state(), "closed");
    await call(() => Promise.reject(new DOMException("timed out", "TimeoutError"))).catch(() => {});
    assert.equal(breaker.state(), "open");
  });

  it("does not count a failure marked as another service's, one further down that this dependency reports (stacked breakers), whatever its code", async (t) => {
    const { breaker, call } = setup(t, { dependency: "orders" });
    // orders' breaker for pricing is open: orders answers at once, marked, with a pushback hint.
    const pricingFailed = (code: Code) =>
      new ConnectError("orders: pricing.GetPrices: circuit open", code, { [failedDependencyHeader]: "pricing", "grpc-retry-pushback-ms": "4000" });
    for (let i = 0; i < 20; i++) await call(() => Promise.reject(pricingFailed(i % 2 ? Code.Unavailable : Code.DeadlineExceeded))).catch(() => {});
    assert.equal(breaker.state(), "closed");
    assert.equal(breaker.stats().failures, 0);
    assert.equal(breaker.stats().notCounted, 20);
    // A failure marked as orders' own (this hop's mapping names the dependency it called) counts.
    // (The answers above were a live service's, so they count as successes in the window: past 20 of 40 it opens.)
    for (let i = 0; i < 30; i++) {
      await call(() => Promise.reject(new ConnectError("orders: down", Code.Unavailable, { [failedDependencyHeader]: "orders" }))).catch(() => {});
    }
    assert.equal(breaker.state(), "open");
    assert.equal(breaker.stats().failures, 21);
  });

  it("a trial answered with another service's failure proves this one is up and closes it", async (t) => {
    const { breaker, fail, call, tick } = setup(t, { dependency: "orders" });
    for (let i = 0; i < 10; i++) await fail();
    tick(5_000);
    assert.equal(breaker.state(), "half_open");
    await call(() => Promise.reject(new ConnectError("refused", Code.Unavailable, { [failedDependencyHeader]: "pricing" }))).catch(() => {});
    assert.equal(breaker.state(), "closed");
  });

  it("rethrows fn's error unchanged and returns its value", async (t) => {
    const { call } = setup(t);
    const original = new ConnectError("not found", Code.NotFound);
    assert.equal(await call(() => Promise.reject(original)).catch((e: unknown) => e), original);
    assert.equal(await call(async () => 7), 7);
  });

  it("half-open lets one trial through; its success closes the breaker", async (t) => {
    const { breaker, events, fail, call, calls, tick } = setup(t);
    for (let i = 0; i < 10; i++) await fail();
    tick(4_999);
    assert.equal(breaker.state(), "open");
    tick(1);
    assert.equal(breaker.state(), "half_open");
    let finishTrial: (v: string) => void = () => {};
    const trial = call(() => new Promise<string>((resolve) => (finishTrial = resolve)));
    const concurrent = await call(async () => "no").catch((e: unknown) => e);
    assertOpenRejection(concurrent, /^stock: circuit half-open, trial call in flight$/);
    assert.equal(calls(), 11, "only the trial reached fn");
    finishTrial("ok");
    assert.equal(await trial, "ok");
    assert.equal(breaker.state(), "closed");
    assert.deepEqual(transitions(events), ["closed->open", "open->half_open", "half_open->closed"]);
  });

  it("a failed trial re-opens it for another resetTimeout", async (t) => {
    const { breaker, events, fail, tick } = setup(t);
    for (let i = 0; i < 10; i++) await fail();
    tick(5_000);
    await fail();
    assert.equal(breaker.state(), "open");
    tick(4_999);
    assert.equal(breaker.state(), "open");
    tick(1);
    assert.equal(breaker.state(), "half_open");
    assert.deepEqual(transitions(events), ["closed->open", "open->half_open", "half_open->open", "open->half_open"]);
    assert.equal(breaker.stats().opened, 2);
  });

  it("with a first reset, waits that first, doubles it after each failed trial up to resetTimeout, and starts again from it once closed", async (t) => {
    const { breaker, fail, succeed, tick } = setup(t, { firstResetTimeout: 500, resetTimeout: 3_000 });
    /** How long it stays open from now: ticks 1 ms at a time until half-open. */
    const openFor = () => {
      let ms = 0;
      while (breaker.state() === "open" && ms < 10_000) tick(1), ms++;
      return ms;
    };
    const openMessage = async () => ((await fail()) as ConnectError).rawMessage;
    for (let i = 0; i < 10; i++) await fail();
    assert.equal(breaker.state(), "open");
    assert.match(await openMessage(), /next trial in ~1s/);
    const waits = [openFor()];
    for (let i = 0; i < 4; i++) {
      await fail(); // the trial fails: open again
      waits.push(openFor());
    }
    assert.deepEqual(waits, [500, 1_000, 2_000, 3_000, 3_000]);
    await succeed(); // the trial succeeds: closed
    assert.equal(breaker.state(), "closed");
    for (let i = 0; i < 10; i++) await fail();
    assert.equal(openFor(), 500, "a new open period starts from the first wait again");
  });

  it("a probe that finds the dependency back closes an open breaker at once, and only an open one", async (t) => {
    const { breaker, events, fail, succeed, tick, calls } = setup(t, { firstResetTimeout: 500, resetTimeout: 5_000 });
    assert.equal(breaker.probeSucceeded(), false, "a closed breaker stays as it is");
    for (let i = 0; i < 10; i++) await fail();
    tick(100);
    assert.equal(breaker.probeSucceeded(), true);
    assert.equal(breaker.state(), "closed");
    assert.equal(await succeed(), "ok");
    assert.equal(calls(), 11, "traffic flows without waiting for a trial");
    assert.deepEqual(transitions(events), ["closed->open", "open->closed"]);
    // The reset timer of the period the probe ended does not fire later.
    tick(10_000);
    assert.equal(breaker.state(), "closed");
  });

  it("a probe is trusted once per recovery: reopened within a window of a probe closing it, it waits for its trial", async (t) => {
    const { breaker, fail, tick } = setup(t, { firstResetTimeout: 500, resetTimeout: 5_000, rollingCountTimeout: 10_000 });
    for (let i = 0; i < 10; i++) await fail();
    assert.equal(breaker.probeSucceeded(), true);
    // The probe was wrong: the calls still fail, and the breaker opens again.
    for (let i = 0; i < 10; i++) await fail();
    assert.equal(breaker.state(), "open");
    assert.equal(breaker.probeSucceeded(), false, "not trusted again within the window");
    tick(500);
    assert.equal(breaker.state(), "half_open", "the reset timer's trial decides instead");
    await fail();
    // A window after the probe's close, a new recovery may be a probe's again.
    tick(10_000);
    for (let i = 0; i < 10; i++) await fail();
    assert.equal(breaker.state(), "open");
    assert.equal(breaker.probeSucceeded(), true);
  });

  it("the open breaker's pushback is the wait of the period it is in", async (t) => {
    const { breaker, fail, tick } = setup(t, { firstResetTimeout: 500, resetTimeout: 3_000 });
    for (let i = 0; i < 10; i++) await fail();
    tick(200);
    assert.equal(localRejection(await fail())?.retryAfterMs, 300);
    tick(300);
    await fail(); // failed trial: the next period is 1 s
    tick(400);
    assert.equal(localRejection(await fail())?.retryAfterMs, 600);
    assert.equal(breaker.state(), "open");
  });

  it("a trial answered with a caller error proves the server is up and closes it", async (t) => {
    const { breaker, fail, tick } = setup(t);
    for (let i = 0; i < 10; i++) await fail();
    tick(5_000);
    await fail(Code.NotFound);
    assert.equal(breaker.state(), "closed");
  });

  it("a trial that proved nothing (caller cancelled, bulkhead full) keeps it open", async (t) => {
    const { breaker, fail, call, tick } = setup(t);
    for (let i = 0; i < 10; i++) await fail();
    tick(5_000);
    await fail(Code.Canceled);
    assert.equal(breaker.state(), "open");
    tick(5_000);
    await call(() =>
      Promise.reject(markLocalRejection(new ConnectError("full", Code.ResourceExhausted), { kind: "bulkhead_full", dependency: "stock" })),
    ).catch(() => {});
    assert.equal(breaker.state(), "open");
  });

  it("starts a clean window after closing, so one new failure does not re-open it", async (t) => {
    const { breaker, fail, succeed, tick } = setup(t);
    for (let i = 0; i < 10; i++) await fail();
    tick(5_000);
    await succeed();
    assert.equal(breaker.state(), "closed");
    assert.deepEqual(breaker.stats().window, { calls: 0, failures: 0 });
    await fail();
    assert.equal(breaker.state(), "closed");
  });

  it("forgets failures older than the rolling window", async (t) => {
    const { breaker, fail, tick } = setup(t);
    for (let i = 0; i < 9; i++) await fail();
    assert.equal(breaker.stats().window.failures, 9);
    tick(10_000);
    assert.equal(breaker.stats().window.failures, 0);
    await fail();
    assert.equal(breaker.state(), "closed");
  });

  it("slides the window bucket by bucket", async (t) => {
    const { breaker, fail, tick } = setup(t);
    for (let i = 0; i < 5; i++) await fail();
    tick(5_000);
    for (let i = 0; i < 4; i++) await fail();
    tick(5_000); // the first five leave, the last four stay
    assert.equal(breaker.stats().window.failures, 4);
  });

  it("accepts an isFailure override, but never counts local rejections", async (t) => {
    const { breaker, fail, call } = setup(t, { volumeThreshold: 2, isFailure: () => true });
    await fail(Code.NotFound);
    await call(() =>
      Promise.reject(markLocalRejection(new ConnectError("full", Code.ResourceExhausted), { kind: "bulkhead_full", dependency: "stock" })),
    ).catch(() => {});
    assert.equal(breaker.state(), "closed");
    await fail(Code.InvalidArgument);
    assert.equal(breaker.state(), "open");
  });

  it("reports outcomes and transitions for metrics", async (t) => {
    const { breaker, events, fail, succeed, call } = setup(t, { volumeThreshold: 2 });
    await succeed();
    await fail(Code.NotFound);
    await fail();
    await fail();
    await fail(); // 3 of 5 calls failed: above 50%
    await call(async () => 1).catch(() => {});
    // opossum opens the breaker while handling the failure, so the
    // transition is reported just before the failure that caused it.
    assert.deepEqual(
      events.map((e) => e.type),
      ["success", "not_counted", "failure", "failure", "transition", "failure", "rejected"],
    );
    assert.deepEqual(breaker.stats(), {
      name: "stock",
      state: "open",
      successes: 1,
      failures: 3,
      notCounted: 1,
      rejected: 1,
      opened: 1,
      // opossum counts rejected calls as calls in its window.
      window: { calls: 6, failures: 3 },
    });
  });

  it("rejects everything after dispose", async (t) => {
    const { breaker, call, calls } = setup(t);
    breaker.dispose();
    const err = await call(async () => 1).catch((e: unknown) => e);
    assertOpenRejection(err, /shut down/);
    assert.equal(calls(), 0);
  });

  it("refuses nonsensical settings", (t) => {
    t.mock.timers.enable({ apis: ["setTimeout", "setInterval", "Date"] });
    assert.throws(() => new CircuitBreaker({ name: "x", volumeThreshold: 0 }), RangeError);
    assert.throws(() => new CircuitBreaker({ name: "x", errorThresholdPercentage: 100 }), RangeError);
    assert.throws(() => new CircuitBreaker({ name: "x", resetTimeout: 0 }), RangeError);
    assert.throws(() => new CircuitBreaker({ name: "x", rollingCountBuckets: 0 }), RangeError);
  });
});

describe("isDependencyFailure", () => {
  it("classifies by code, and local rejections never", () => {
    assert.equal(isDependencyFailure(new ConnectError("", Code.Unavailable)), true);
    assert.equal(isDependencyFailure(new ConnectError("", Code.DataLoss)), true);
    assert.equal(isDependencyFailure(new ConnectError("", Code.NotFound)), false);
    assert.equal(isDependencyFailure(new ConnectError("", Code.Aborted)), false);
    assert.equal(isDependencyFailure(new Error("socket hang up")), true);
    assert.equal(isDependencyFailure(new DOMException("x", "AbortError")), false);
    const local = markLocalRejection(new ConnectError("", Code.Unavailable), { kind: "circuit_open", dependency: "x" });
    assert.equal(isDependencyFailure(local), false);
    const markedPricing = new ConnectError("", Code.Unavailable, { [failedDependencyHeader]: "pricing" });
    assert.equal(isDependencyFailure(markedPricing, "orders"), false, "pricing's failure, reported by orders");
    assert.equal(isDependencyFailure(markedPricing, "pricing"), true, "pricing's own, as this hop mapped it");
  });
});
