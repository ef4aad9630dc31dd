import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { currentFaults, faultApplies, injectedDelay, parseFaults, setFaults, shouldDropResponse, shouldFail } from "./faults.js";

describe("fault injection", () => {
  test("off by default", () => {
    setFaults({});
    assert.deepEqual(currentFaults(), {});
    assert.equal(faultApplies(currentFaults().db), false);
  });

  test("parses a full document and refuses bad ones naming the field", () => {
    const f = parseFaults('{"db":{"latencyMs":500,"unreachable":true},"handler":{"errorRate":0.5},"dependencies":{"stock":{"dropResponseRate":1,"times":2}}}');
    assert.equal(f.db?.latencyMs, 500);
    assert.equal(f.dependencies?.["stock"]?.times, 2);
    assert.throws(() => parseFaults('{"db":{"latencyMs":-1}}'), /db.latencyMs/);
    assert.throws(() => parseFaults('{"db":{"errorRate":2}}'), /db.errorRate/);
    assert.throws(() => parseFaults('{"disk":{}}'), /unknown field "disk"/);
    assert.throws(() => parseFaults('{"handler":{"unreachable":true}}'), /unknown field "unreachable"/);
    assert.throws(() => parseFaults("[1]"), /must be an object/);
    assert.throws(() => parseFaults("{"));
  });

  test("`times` spends itself: one failure, then success", () => {
    setFaults({ db: { errorRate: 1, times: 1 } });
    const first = currentFaults().db;
    assert.equal(faultApplies(first), true);
    assert.equal(shouldFail(first), true);
    assert.equal(faultApplies(currentFaults().db), false);
    setFaults({});
  });

  test("rates are probabilities", () => {
    assert.equal(
      shouldFail({ errorRate: 0.5 }, () => 0.4),
      true,
    );
    assert.equal(
      shouldFail({ errorRate: 0.5 }, () => 0.6),
      false,
    );
    assert.equal(
      shouldDropResponse({ dropResponseRate: 1 }, () => 0.99),
      true,
    );
    assert.equal(
      shouldFail({}, () => 0),
      false,
    );
  });

  test("a rate of 0 never fires, whatever random() says; a rate fires strictly below it", () => {
    for (const rate of [undefined, 0]) {
      assert.equal(
        shouldFail({ errorRate: rate }, () => 0),
        false,
        `errorRate ${rate}`,
      );
      assert.equal(
        shouldDropResponse({ dropResponseRate: rate }, () => 0),
        false,
        `dropResponseRate ${rate}`,
      );
    }
    assert.equal(
      shouldFail(undefined, () => 0),
      false,
    );
    assert.equal(
      shouldDropResponse(undefined, () => 0),
      false,
    );
    assert.equal(
      shouldFail({ errorRate: 0.5 }, () => 0.5),
      false,
      "at the rate: no",
    );
    assert.equal(
      shouldDropResponse({ dropResponseRate: 0.5 }, () => 0.5),
      false,
      "at the rate: no",
    );
    assert.equal(
      shouldDropResponse({ dropResponseRate: 0.5 }, () => 0.49),
      true,
    );
    assert.equal(
      shouldDropResponse({ dropResponseRate: 0.5 }, () => 0.51),
      false,
    );
  });

  test("a spec without `times` applies to every event; one with `times` to exactly that many", () => {
    setFaults({ handler: { latencyMs: 1 }, db: { errorRate: 1, times: 2 } });
    for (let i = 0; i < 5; i++) assert.equal(faultApplies(currentFaults().handler), true);
    assert.deepEqual(
      [1, 2, 3].map(() => faultApplies(currentFaults().db)),
      [true, true, false],
    );
    // Setting faults again (even the same) starts the count afresh.
    setFaults({ db: { errorRate: 1, times: 2 } });
    assert.equal(faultApplies(currentFaults().db), true);
    setFaults({});
    assert.equal(currentFaults().handler, undefined, "{} turns everything off");
  });

  test("the faults in force are a copy: changing the document afterwards changes nothing", () => {
    const doc = { db: { latencyMs: 100 } };
    setFaults(doc);
    doc.db.latencyMs = 5;
    assert.equal(currentFaults().db?.latencyMs, 100);
    assert.ok(Object.isFrozen(currentFaults()));
    setFaults({});
  });

  test("injected latency waits, and ends early with the signal's reason when the caller goes away", async () => {
    assert.equal(injectedDelay(undefined), undefined, "no spec: no delay, not even a promise");
    assert.equal(injectedDelay({ latencyMs: 0 }), undefined);
    await injectedDelay({ latencyMs: 1 });
    const gone = new AbortController();
    gone.abort("cancelled");
    await assert.rejects(injectedDelay({ latencyMs: 60_000 }, gone.signal)!, (e: unknown) => e === "cancelled");
    const later = new AbortController();
    const waiting = injectedDelay({ latencyMs: 60_000 }, later.signal)!;
    later.abort("deadline");
    await assert.rejects(waiting, (e: unknown) => e === "deadline");
    // Not aborted: resolves, and leaves no listener behind on the caller's signal.
    const kept = new AbortController();
    await injectedDelay({ latencyMs: 1 }, kept.signal);
    kept.abort("after");
  });

  test("parsing: empty text is no faults; every section and field is checked and named", () => {
    assert.deepEqual(parseFaults(""), {});
    assert.deepEqual(parseFaults({ handler: { latencyMs: 5 } }), { handler: { latencyMs: 5 } });
    assert.deepEqual(parseFaults('{"dependencies":{"orders":{"errorRate":0.25}}}'), { dependencies: { orders: { errorRate: 0.25 } } });
    assert.throws(() => parseFaults("null"), /^Error: faults must be an object$/);
    assert.throws(() => parseFaults('{"dependencies":[]}'), /^Error: dependencies must be an object$/);
    assert.throws(() => parseFaults('{"dependencies":{"orders":5}}'), /^Error: dependencies\.orders must be an object$/);
    assert.throws(() => parseFaults('{"handler":{"times":0}}'), /^Error: handler\.times must be a positive integer$/);
    assert.throws(() => parseFaults('{"handler":{"latencyMs":1.5}}'), /^Error: handler\.latencyMs must be an integer from 0 to 600000$/);
    assert.throws(() => parseFaults('{"handler":{"latencyMs":600001}}'), /handler\.latencyMs/);
    assert.throws(() => parseFaults('{"db":{"unreachable":"yes"}}'), /^Error: db\.unreachable must be true or false$/);
    assert.throws(
      () => parseFaults('{"db":{"x":1}}'),
      /^Error: db: unknown field "x" \(expected latencyMs, errorRate, dropResponseRate, times, unreachable\)$/,
    );
    assert.throws(() => parseFaults('{"handler":{"x":1}}'), /^Error: handler: unknown field "x" \(expected latencyMs, errorRate, dropResponseRate, times\)$/);
    assert.throws(() => parseFaults('{"x":1}'), /^Error: faults: unknown field "x" \(expected db, handler, dependencies\)$/);
    assert.deepEqual(parseFaults('{"db":{"unreachable":false}}'), { db: { unreachable: false } });
  });
});
