import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { currentFaults, faultApplies, parseFaults, setFaults, shouldDropResponse, shouldFail } from "./faults.js";

describe("fault injection", () => {
  test("off by default", () => {
    setFaults({});
    assert.deepEqual(currentFaults(), {});
    assert.equal(faultApplies(currentFaults().db), false);
  });

  test("parses a full document and refuses bad ones naming the field", () => {
    const f = parseFaults('{"db":{"latencyMs":500,"unreachable":true},"handler":{"errorRate":0.5},"dependencies":{"pricing":{"dropResponseRate":1,"times":2}}}');
    assert.equal(f.db?.latencyMs, 500);
    assert.equal(f.dependencies?.["pricing"]?.times, 2);
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
    assert.equal(shouldFail({ errorRate: 0.5 }, () => 0.4), true);
    assert.equal(shouldFail({ errorRate: 0.5 }, () => 0.6), false);
    assert.equal(shouldDropResponse({ dropResponseRate: 1 }, () => 0.99), true);
    assert.equal(shouldFail({}, () => 0), false);
  });
});
